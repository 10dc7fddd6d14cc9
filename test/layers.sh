#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Dependencies run one way, as a reader of the code sees them
# (contrib/depgraph: calls, types, macros, inlines and struct members used
# across files). No layer holds a cycle, nor does src/ as a whole. Folders
# stack, each using only those below it: src/verbs' ibv/ over the verbs
# layer over soft/ over dev/ (the device interface both implement and
# use); soft/'s device/ (the device and its entry points) over wire/ (the
# engine that moves packets) over objects/ (the verbs objects and the
# device instance) over fabric/ (what connects the processes) over its
# own srq_soft_api.h (the types every layer shares). A cycle or an arrow
# upward fails.
#
set -u
src=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$src/.." && pwd)
. "$src/result.sh"
fail=0
depgraph() { "${PYTHON3:-python3}" "$top/contrib/depgraph" "$@" 2>&1; }

layers=(src src/uct src/verbs src/verbs/ibv src/verbs/soft tools/fuzz)
for layer in "${layers[@]}"; do
    out=$(cd "$top" && depgraph "$layer")
    name="layers_${layer//\//_}_cycles"
    if grep -q " files, .* arrows, 0 cycles" <<<"$out"; then
        result "$name" 1 "$(head -1 <<<"$out")"
    else
        result "$name" 0 "$out"
    fi
done

# LAYER|its folders, top to bottom
stacks=(
"src/verbs|ibv,.,soft,dev"
"src/verbs/soft|device,wire,objects,fabric,."
)
for entry in "${stacks[@]}"; do
    layer=${entry%%|*}
    out=$(cd "$top" && depgraph --stack "${entry#*|}" "$layer")
    name="layers_${layer//\//_}_upward"
    if grep -q "^  0 arrows upward" <<<"$out"; then
        result "$name" 1 "$(grep 'arrows upward' <<<"$out")"
    else
        result "$name" 0 "$(sed -n '/arrows upward/,$p' <<<"$out")"
    fi
done

# One job a file: doc/architecture.md says no source file of src/ or
# tools/ has more than 700 lines (generated ones, *_gen.*, aside)
long=$(cd "$top" &&
       find src tools -name '*.[ch]' ! -name '*_gen.[ch]' -exec wc -l {} + |
       awk '$2 != "total" && $1 > 700 { print $2 ": " $1 " lines" }')
result layers_files_at_most_700_lines "$([ -z "$long" ] && echo 1)" "$long"

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

# --stack places a file of a folder it does not name with the nearest
# folder above it that it names: low/sub/b.c is low's, and its call up
# into top/ an arrow upward
mkdir -p "$tmp/stk/top" "$tmp/stk/low/sub"
printf 'int a_f(void);\n' >"$tmp/stk/top/a.h"
printf '#include "a.h"\nint a_f(void) { return 1; }\n' >"$tmp/stk/top/a.c"
printf '#include "../../top/a.h"\nint b_f(void) { return a_f(); }\n' \
    >"$tmp/stk/low/sub/b.c"
out=$(cd "$tmp" && depgraph --stack top,low stk)
result layers_stack_subfolder_upward \
    "$(grep -q '^  1 arrows upward' <<<"$out" &&
       grep -q '^    low/sub/b -> top/a' <<<"$out" && echo 1)" "$out"

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
