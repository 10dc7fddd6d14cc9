#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Dependencies run one way, as a reader of the code sees them
# (contrib/depgraph: calls, types, macros, inlines and struct members used
# across files). Each layer below may hold only the cycles named for it
# (doc/architecture.md says why each one is there); src/verbs' folders
# stack ibv/ over the verbs layer over soft/ over dev/ (the device
# interface both implement and use), and may hold only the upward arrows
# named for it. A new cycle or upward arrow fails, and so does a named one
# that is gone (take it off the list, and off the doc).
#
set -u
src=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$src/.." && pwd)
. "$src/result.sh"
fail=0
depgraph() { "${PYTHON3:-python3}" "$top/contrib/depgraph" "$@" 2>&1; }

# LAYER|cycles allowed, ';' between cycles, each as its files in order
layers=(
"src/uct|"
"tools/fuzz|"
"src/verbs|"
"src/verbs/ibv|"
"src/verbs/soft|"
)
# src/verbs' arrows from a lower folder up to a higher one, allowed
# (none: what soft/ and the verbs layer share is in dev/, below both)
upward_allowed=""

for entry in "${layers[@]}"; do
    layer=${entry%%|*}
    allowed=$(tr ';' '\n' <<<"${entry#*|}" | sed '/^$/d' | sort)
    out=$(cd "$top" && depgraph "$layer")
    found=$(sed -n 's/^  cycle of [0-9]*: //p' <<<"$out" | sort)
    name="layers_${layer//\//_}_cycles"
    if grep -q " files, .* arrows" <<<"$out" && [ "$found" = "$allowed" ]; then
        result "$name" 1 "$(head -1 <<<"$out")"
    else
        result "$name" 0 "$out
allowed: ${allowed:-none}"
    fi
done

out=$(cd "$top" && depgraph --stack ibv,.,soft,dev src/verbs)
found=$(sed -n '/arrows upward/,$p' <<<"$out" | sed -n 's/^    \(.*\) (.*/\1/p' | sort)
if grep -q "arrows upward" <<<"$out" &&
   [ "$found" = "$(sort <<<"$upward_allowed")" ]; then
    result layers_src_verbs_upward 1 "$(grep 'arrows upward' <<<"$out")"
else
    result layers_src_verbs_upward 0 "$out
allowed: $upward_allowed"
fi

# One file defines functions of the C library and libibverbs (`stat`,
# `access`, `ibv_get_device_list`, ...): the interposer that serves soft0
# to any verbs program (doc/architecture.md says why). Every caller of
# such a name in the process calls it, so a second definer would be a
# second interposer, hidden in a library: none may appear.
out=$(cd "$top" && depgraph --namesakes src)
result layers_one_interposer \
    "$(grep -q '^src: 1 files' <<<"$out" &&
       grep -q '^  src/verbs/ibv/srq_ibv_interpose.c ' <<<"$out" && echo 1)" \
    "$out"

# An in-tree build writes generated files (*_gen.c, *_gen.h) beside the
# sources: they are no file of the layer (the build's own are read with
# --build). A layer of a.c calling into x_gen.c has one file, no arrow.
tmp=$(mktemp -d "${TMPDIR:-/tmp}/srq-layers.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/lay"
printf '#include "x_gen.h"\nint a_f(void) { return x_gen_f(); }\n' >"$tmp/lay/a.c"
printf 'int x_gen_f(void);\n' >"$tmp/lay/x_gen.h"
printf '#include "x_gen.h"\nint x_gen_f(void) { return 1; }\n' >"$tmp/lay/x_gen.c"
out=$(cd "$tmp" && depgraph --edges lay)
result layers_generated_in_tree_not_read \
    "$(grep -q '^lay: 1 files, 0 arrows' <<<"$out" && echo 1)" "$out"

# What a reader sees of another file's struct, however its type is
# reached: each case a tree of its own, each FROM:TO an arrow it must show.
arrows() {
    local name=$1 dir=$2 out ok=1 a; shift 2
    out=$(cd "$tmp" && depgraph --edges "$dir")
    for a in "$@"; do
        grep -Eq "^  ${a%%:*} -> (.*, )?${a#*:}(,|\$)" <<<"$out" || ok=0
    done
    result "$name" "$ok" "$out
expected: $*"
}
# b.h defines struct b_obj; the others name it through a typedef of their
# own (`typedef struct b_obj b_obj_t;`, an opaque handle while only
# pointers to it pass), so b.h's own names are not what makes the arrow.
mkdir -p "$tmp/td" "$tmp/cast" "$tmp/member"
for d in td cast member; do
    printf 'struct b_obj { int n; };\n' >"$tmp/$d/b.h"
done
alias_b='#include "b.h"\ntypedef struct b_obj b_obj_t;\n'
# 1. a type reached through a typedef of a struct defined elsewhere:
#    its members read, its size taken
printf "$alias_b"'int a_n(b_obj_t *o) { return o->n; }\n' >"$tmp/td/a.c"
printf "$alias_b"'unsigned long c_sz(void) { return sizeof(b_obj_t); }\n' \
    >"$tmp/td/c.c"
arrows layers_typedef_of_struct_seen td a:b.h c:b.h
# 2. a void * cast to another file's struct (soft_async.c's elements)
printf "$alias_b"'void a_set(void *e) { ((b_obj_t *)e)->n = 1; }\n' \
    >"$tmp/cast/a.c"
arrows layers_void_cast_seen cast a:b.h
# 3. members written through variables typed in ways a declaration by
#    itself does not show: a second declarator, a function's result, an
#    element of an array member
printf "$alias_b"'void a_f(void *e) { b_obj_t *p = e, *q = e; q->n = p != q; }\n' \
    >"$tmp/member/a.c"
printf "$alias_b"'b_obj_t *m_of(void *e);\nvoid c_f(void *e) { m_of(e)->n = 1; }\n' \
    >"$tmp/member/c.c"
printf "$alias_b"'struct d_obj { b_obj_t *objs[4]; };\nvoid d_f(struct d_obj *d) { d->objs[1]->n = 2; }\n' \
    >"$tmp/member/d.c"
arrows layers_member_through_untracked_type_seen member a:b.h c:b.h d:b.h
exit $fail
