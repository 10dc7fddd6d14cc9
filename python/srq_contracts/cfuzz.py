# SPDX-License-Identifier: BSD-3-Clause
"""Generates the fuzzer's contract tables (srq-verbs-fuzz, tools/fuzz):
every failure and post-condition of every contract, with the errno or
completion status the contract gives, as C.

    FZ_F(ibv_post_srq_recv, queue_full)    an index into fz_failures[]
    FZ_P(ibv_post_recv, chain_prefix_posted) an index into fz_posts[]

The fuzzer refers to failures by these names: one the contracts do not
have does not compile, and the expected errno always comes from the
contract. Why generated and not read at run time: the fuzzer stays a
self-contained C program (no JSON parser, no files to find when
installed), and a changed contract rebuilds it.
"""


def _errs(f):
    out = []
    if f.get("errno"):
        out.append(f["errno"])
    out.extend(f.get("errno_also", []))
    return out


def generate(contracts):
    lines = ["/* Generated from the verb contracts by python/srq_contracts (cfuzz.py): do not edit. */",
             "#ifndef FZ_CONTRACT_GEN_H_", "#define FZ_CONTRACT_GEN_H_", "",
             "#include <errno.h>", "#include <infiniband/verbs.h>", "",
             "#define FZ_MAX_ERRNOS 4", "",
             "typedef struct fz_failure {",
             "    const char *verb, *id, *detected, *condition;",
             "    int         errnos[FZ_MAX_ERRNOS];  /* the contract's errno first, 0-terminated */",
             "    int         wc_status;              /* -1: not a completion failure */",
             "} fz_failure_t;", "",
             "typedef struct fz_post {",
             "    const char *verb, *id, *doc;",
             "} fz_post_t;", ""]
    fails, posts = [], []
    for verb in sorted(contracts):
        c = contracts[verb]
        for f in c.data["failures"]:
            fails.append((verb, f))
        for p in c.data["postconditions"]:
            posts.append((verb, p))
    lines.append("enum {")
    for verb, f in fails:
        lines.append("    FZ_F_%s__%s," % (verb, f["id"]))
    lines.append("    FZ_NUM_FAILURES")
    lines.append("};")
    lines.append("enum {")
    for verb, p in posts:
        lines.append("    FZ_P_%s__%s," % (verb, p["id"]))
    lines.append("    FZ_NUM_POSTS")
    lines.append("};")
    lines.append("")
    lines.append("#define FZ_F(_verb, _id) FZ_F_##_verb##__##_id")
    lines.append("#define FZ_P(_verb, _id) FZ_P_##_verb##__##_id")
    lines.append("")
    lines.append("static const fz_failure_t fz_failures[FZ_NUM_FAILURES] __attribute__((unused)) = {")
    for verb, f in fails:
        errs = _errs(f)[:3]
        cond = f["condition"].replace("\\", "\\\\").replace('"', '\\"')
        lines.append('    { "%s", "%s", "%s", "%s", { %s }, %s },' %
                     (verb, f["id"], f["detected"], cond, ", ".join(errs + ["0"]),
                      f.get("wc_status", "-1")))
    lines.append("};")
    lines.append("")
    lines.append("static const fz_post_t fz_posts[FZ_NUM_POSTS] __attribute__((unused)) = {")
    for verb, p in posts:
        doc = p["doc"].replace("\\", "\\\\").replace('"', '\\"')
        lines.append('    { "%s", "%s", "%s" },' % (verb, p["id"], doc))
    lines.append("};")
    lines.append("")
    lines.append("#endif")
    return "\n".join(lines) + "\n"
