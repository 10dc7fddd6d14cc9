#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Everything a user can ask says the version configure.ac gives
# (PACKAGE_VERSION): the plugin's one load-time line at UCX_LOG_LEVEL=info,
# srq-run --version, the tools' --version, the Python package's
# __version__; and NEWS has this version's section with its date.
#
set -u
b=${SRQ_TEST_BUILDDIR:?}
top=$(cd "${srcdir:-$(dirname "$0")/..}" && pwd)
. "$(dirname "$0")/result.sh"
fail=0
ver=$(sed -n 's/^#define PACKAGE_VERSION "\(.*\)"$/\1/p' "$b/srq_config.h")
[ -n "$ver" ] || { echo "FAIL: no PACKAGE_VERSION in $b/srq_config.h"; exit 1; }

out=$(UCX_LOG_LEVEL=info "${SRQ_RUN:?}" ucx_info -d 2>&1)
n=$(grep -c "ucx-srq $ver: transport rc_srq, built for UCX ${SRQ_UCX_VERSION:?}$" <<<"$out")
result "the plugin says its version once at load (UCX_LOG_LEVEL=info)" \
    "$([ "$n" = 1 ] && echo 1)" "$(grep 'ucx-srq' <<<"$out")"

out=$("$b/contrib/srq-run" --version 2>&1)
result "srq-run --version" \
    "$([ "$out" = "srq-run (ucx-srq) $ver, plugin built for UCX $SRQ_UCX_VERSION" ] && echo 1)" "$out"
# --version and __version__ need no contracts: a folder that is not there
# (nothing installed yet, as in make distcheck) made the import fail
for t in srq-verbs-fuzz srq-verbs-py srq-verbs-replay; do
    out=$(SRQ_CONTRACTS_DIR=/nonexistent "$b/tools/$t" --version 2>&1)
    result "$t --version" "$([ "$out" = "$t (ucx-srq) $ver" ] && echo 1)" "$out"
done
out=$(SRQ_CONTRACTS_DIR=/nonexistent PYTHONPATH="$top/python" python3 -c 'import srq_contracts; print(srq_contracts.__version__)' 2>&1)
result "srq_contracts.__version__" "$([ "$out" = "$ver" ] && echo 1)" "$out"

# NEWS: "VERSION (YYYY-MM-DD)" underlined, above any older release
line=$(grep -nE "^$ver \([0-9]{4}-[0-9]{2}-[0-9]{2}\)$" "$top/NEWS" | head -1)
under=$([ -n "$line" ] && sed -n "$(( ${line%%:*} + 1 ))p" "$top/NEWS")
result "NEWS has the section '$ver (date)'" \
    "$([ -n "$line" ] && [[ $under == ---* ]] && echo 1)" "${line:-no such line}"
exit $fail
