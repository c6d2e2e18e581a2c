#!/bin/sh
# Compiler launcher (CMAKE_CUDA_COMPILER_LAUNCHER) for the kernel families built with
# RESOURCE_USAGE: runs the compile and keeps everything it prints in the file $1, which
# tests/cpu/test_register_budgets.cpp reads (ptxas' registers and spills per kernel and arch);
# prints all but ptxas' info lines, so warnings and errors still show.
report=$1
shift
mkdir -p "$(dirname "$report")"
"$@" >"$report.tmp" 2>&1
rc=$?
grep -v -e '^ptxas info' -e 'bytes stack frame' "$report.tmp" >&2
mv "$report.tmp" "$report"
exit $rc
