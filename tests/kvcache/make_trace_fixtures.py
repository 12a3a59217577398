#!/usr/bin/env python3
"""Writes small synthetic request traces in the three public formats kvcache --serve
reads (bench/commands/kvcache/kvserve_trace.h), seeded, so the fixtures in
tests/kvcache/fixtures/ are reproducible: python3 tests/kvcache/make_trace_fixtures.py.

No public trace is downloaded or copied; where they are published:
  Azure LLM inference traces: github.com/Azure/AzurePublicDataset (AzureLLMInferenceTrace_*.csv)
  BurstGPT: github.com/HPMLL/BurstGPT (BurstGPT_*.csv)
  Mooncake: github.com/kvcache-ai/Mooncake (FAST25-release/traces/*.jsonl)
"""
import json
import os
import random

N = 50  # requests per fixture
here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")
os.makedirs(here, exist_ok=True)
rng = random.Random(26)

times, t = [], 0.0
for _ in range(N):
    times.append(t)
    t += rng.expovariate(20.0)  # 20 requests/s, Poisson
inputs = [max(1, int(rng.lognormvariate(7.0, 0.8))) for _ in range(N)]
outputs = [rng.randint(10, 400) for _ in range(N)]

with open(os.path.join(here, "azure.csv"), "w") as f:
    f.write("TIMESTAMP,ContextTokens,GeneratedTokens\n")
    for s, i, o in zip(times, inputs, outputs):
        sec = int(s)
        f.write(f"2023-11-16 18:{15 + sec // 60:02d}:{sec % 60:02d}.{int((s - sec) * 1e7):07d},{i},{o}\n")

with open(os.path.join(here, "burstgpt.csv"), "w") as f:
    f.write("Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n")
    for s, i, o in zip(times, inputs, outputs):
        f.write(f"{s:.3f},ChatGPT,{i},{o},{i + o},Conversation log\n")

with open(os.path.join(here, "mooncake.jsonl"), "w") as f:
    prefix = list(range(4))  # a shared system prompt's blocks
    for n, (s, i, o) in enumerate(zip(times, inputs, outputs)):
        blocks = (i + 511) // 512
        ids = (prefix + [100 + n * 64 + b for b in range(blocks)])[:blocks]
        f.write(json.dumps({"timestamp": int(s * 1000), "input_length": i, "output_length": o, "hash_ids": ids}) + "\n")

# A malformed line for the bad-input test: input_length is not a number.
os.makedirs(os.path.join(here, "bad"), exist_ok=True)
with open(os.path.join(here, "bad", "mooncake.jsonl"), "w") as f:
    f.write(json.dumps({"timestamp": 0, "input_length": "many", "output_length": 3}) + "\n")

# Two system prompts (2 blocks of 512 tokens each, ids 0-1 and 10-11) shared by the
# requests in a random order, each with its own question after them: prefix routing sends
# each prompt's requests to the decode rank that holds it (kvcache --serve --route prefix).
rng2 = random.Random(27)
with open(os.path.join(here, "mooncake_prefixes.jsonl"), "w") as f:
    t = 0.0
    for n in range(40):
        system = rng2.choice([[0, 1], [10, 11]])
        own = rng2.randint(1, 700)
        blocks = (1024 + own + 511) // 512
        ids = system + [1000 + n * 8 + b for b in range(blocks - 2)]
        f.write(json.dumps({"timestamp": int(t * 1000), "input_length": 1024 + own, "output_length": rng2.randint(10, 400),
                            "hash_ids": ids}) + "\n")
        t += rng2.expovariate(20.0)
