#!/usr/bin/env bash
# dlbench-report bisect on git repositories made here: eight commits of a tiny program (harness.cpp
# around Google Benchmark, compiled once; op.c, compiled by --build at each step, the op's modelled
# cost: its rounds, the spread of its repetitions and the spread's seed) where one commit makes the
# op 2x slower. The times come from each commit's source, not from the machine, so what is checked
# is bisect's logic, the same on a busy machine as on a quiet one. Bisect must name that commit
# and diff the kernel tables across it (written into the JSON by the repository's run.sh); skip a
# commit whose repetitions are too spread to judge (noisy) and still name the right one; with a
# commit whose build fails in the range, say it skipped it and still name the right one, or say
# it cannot decide between the skipped commit and the next, as git bisect does (the binary found
# where dlbench's build puts it, through --work-dir and through --run); stop when the good
# endpoint's re-run reads slower (a neighbour's load, TOY_LOAD, from the third run on). Then bad
# input, a regression that does not reproduce and an interrupt: one line, the documented exit
# code, no worktree or temporary folder left.
#   bisect_test.sh DLBENCH_REPORT GBENCH_INCLUDE_DIRS(:-separated) GBENCH_LIBRARY
set -u
exe=$1 inc=$2 lib=$3
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() {
  echo "FAIL: $*"
  exit 1
}
export TMPDIR=$tmp/tmp  # bisect's temporary folders: must be gone after every run
mkdir -p "$TMPDIR"

incflags=()
IFS=: read -r -a dirs <<<"$inc"
for d in "${dirs[@]}"; do [[ -n "$d" ]] && incflags+=("-I$d"); done
c++ -O2 -std=c++17 "${incflags[@]}" -c "$here/bisect/harness.cpp" -o "$tmp/harness.o" ||
  fail "cannot compile the harness"
# Where dlbench's build puts the family's binary, so bisect finds it without --binary.
build="b=\$DLBENCH_BISECT_BUILD_DIR && mkdir -p \$b/benchmarks && cc -O2 -c op.c -o \$b/op.o && \
c++ $tmp/harness.o \$b/op.o $lib -Wl,-rpath,$(dirname "$lib") -lpthread -o \$b/benchmarks/bench_toy"
case_name='toy/cpu/native/sum.64k/dt:f32'

# make_repo DIR SLOW BROKEN [NOISY]: commits c0..c7; from commit SLOW the op does twice the
# rounds; commit BROKEN (0: none) does not compile, the next one fixes it; commit NOISY (0: none)
# sits between good and bad with a spread of 80%, where 8 repetitions tell it from neither. The
# other commits spread by 3%, a quiet machine's run-to-run noise. The commit hashes go to
# DIR.commits, one a line, c0 first.
make_repo() {
  local dir=$1 slow=$2 broken=$3 noisy=${4:-0} i rounds noise
  git init -q "$dir"
  git -C "$dir" config user.email t@example.com
  git -C "$dir" config user.name t
  : >"$dir.commits"
  for i in 0 1 2 3 4 5 6 7; do
    rounds=4 noise=0.03
    ((i >= slow)) && rounds=8
    ((noisy > 0 && i == noisy)) && rounds=7 noise=0.8
    cat >"$dir/op.c" <<C
/* commit $i */
const int toy_rounds = $rounds;
const double toy_noise = $noise;
const unsigned toy_seed = $((i + 1));
C
    ((broken > 0 && i == broken)) && echo "this does not compile;" >>"$dir/op.c"
    # run.sh: the benchmark, then a kernel table in its JSON as --dlb_kernels=on writes one: the
    # op is one primitive named by its rounds.
    cat >"$dir/run.sh" <<S
#!/bin/sh
"\$DLBENCH_BISECT_BUILD_DIR/benchmarks/bench_toy" "\$@" || exit
for a in "\$@"; do case \$a in --benchmark_out=*) out=\${a#--benchmark_out=} ;; esac; done
sed -i 's/"run_type": "iteration",/"run_type": "iteration", "dlbench": {"kernels": {"source": \
"onednn_verbose", "runs": 1, "rows": [{"name": "sum_x$rounds", "kind": "primitive", \
"launches_per_run": 1, "total_s": 0.000$rounds}]}},/' "\$out"
S
    echo "change $i" >>"$dir/notes.txt"
    local subject="commit $i"
    ((i == slow)) && subject="commit $i: twice the rounds"
    ((noisy > 0 && i == noisy)) && subject="commit $i: a noisy op"
    ((broken > 0 && i == broken)) && subject="commit $i: a build that fails"
    git -C "$dir" add -A
    git -C "$dir" commit -q -m "$subject"
    git -C "$dir" rev-parse HEAD >>"$dir.commits"
  done
}
commit() { sed -n "$(($2 + 1))p" "$1.commits"; }
leftovers() {  # $1: repo
  local n
  n=$(git -C "$1" worktree list | wc -l)
  [[ $n -eq 1 ]] || fail "$1: $n worktrees left: $(git -C "$1" worktree list)"
  [[ -z "$(ls -A "$TMPDIR")" ]] || fail "temporary files left: $(ls "$TMPDIR")"
  [[ -z "$(git -C "$1" status --porcelain)" ]] || fail "$1: the user's working tree changed"
  [[ "$(git -C "$1" rev-parse HEAD)" == "$(commit "$1" 7)" ]] || fail "$1: HEAD moved"
  git -C "$1" for-each-ref refs/bisect | grep -q . && fail "$1: bisect refs left"
  return 0
}
bisect() {  # repo, then more options
  local repo=$1
  shift
  "$exe" bisect --source "$repo" --case "$case_name" --build "$build" --repeats 8 "$@" \
    -- --benchmark_min_time=0.02
}

# 1. The op gets 2x slower at commit 5; the revisions as the user types them, the report as JSON.
make_repo "$tmp/a" 5 0
bisect "$tmp/a" --good HEAD~7 --bad HEAD --format json -o "$tmp/a.json" --run 'sh run.sh' \
  2>"$tmp/a.log"
rc=$?
[[ $rc -eq 0 ]] || fail "scenario 1: exit $rc, want 0: $(cat "$tmp/a.log")"
grep -q "First bad commit\*\*: $(commit "$tmp/a" 5) commit 5: twice the rounds" "$tmp/a.json" ||
  fail "scenario 1 does not name commit 5: $(cat "$tmp/a.json")"
grep -q '"Skipped: none."' "$tmp/a.json" || fail "scenario 1 skipped a commit: $(cat "$tmp/a.json")"
# Across commit 5 (against commit 4, its parent, measured good) one primitive left, another came.
tr -d ' \n' <"$tmp/a.json" >"$tmp/a.flat"
grep -q '{"kernel":"sum_x8","kind":"primitive","kernel_change":"appeared","base_s":null,"new_s":0.0008' \
  "$tmp/a.flat" || fail "scenario 1: the kernel diff lacks the kernel that appeared: $(cat "$tmp/a.json")"
grep -q '{"kernel":"sum_x4","kind":"primitive","kernel_change":"vanished","base_s":0.0004,"new_s":null' \
  "$tmp/a.flat" || fail "scenario 1: the kernel diff lacks the kernel that vanished"
# The endpoints first (good, bad, good again: spaces are gone in a.flat), no step skipped.
grep -q '"role":"good",.*"role":"bad",.*"role":"goodagain",.*"role":"step"' "$tmp/a.flat" ||
  fail "scenario 1: the steps table does not start with the endpoints"
grep -q '"verdict":"skip"' "$tmp/a.flat" && fail "scenario 1: a step was skipped"
# The steps git chose (3, then 5, then 4) on their own side of commit 5.
for v in 3:good 5:bad 4:good; do
  grep -q "\"subject\":\"commit${v%:*}[^\"]*\",\"role\":\"step\",[^}]*\"verdict\":\"${v#*:}\"" \
    "$tmp/a.flat" || fail "scenario 1: commit ${v%:*} is not judged ${v#*:}: $(cat "$tmp/a.json")"
done
leftovers "$tmp/a"

# 2. The build fails at commit 3 (the first one git tries), commit 4 fixes it, commit 6 is slow:
# 3 is skipped, 6 named. The build is kept in --work-dir, the worktree is not.
make_repo "$tmp/b" 6 3
bisect "$tmp/b" --good "$(commit "$tmp/b" 0)" --bad "$(commit "$tmp/b" 7)" -o "$tmp/b.md" \
  --work-dir "$tmp/keep" 2>"$tmp/b.log"
rc=$?
[[ $rc -eq 0 ]] || fail "scenario 2: exit $rc, want 0: $(cat "$tmp/b.log")"
grep -q "First bad commit\*\*: $(commit "$tmp/b" 6)" "$tmp/b.md" ||
  fail "scenario 2 does not name commit 6: $(cat "$tmp/b.md")"
short3=$(commit "$tmp/b" 3 | cut -c1-12)
grep -q "Skipped: 1: $short3 (build failed" "$tmp/b.md" ||
  fail "scenario 2 does not say it skipped commit 3: $(cat "$tmp/b.md")"
grep -q 'No kernel diff' "$tmp/b.md" || fail "scenario 2: no word on the kernel diff"
[[ -x "$tmp/keep/build/benchmarks/bench_toy" ]] || fail "scenario 2: --work-dir's build is gone"
[[ ! -e "$tmp/keep/src" ]] || fail "scenario 2: --work-dir's worktree is left"
leftovers "$tmp/b"

# 3. The build fails at commit 5 and commit 6 is slow: git cannot tell 5 from 6. The benchmark
# runs through --run.
make_repo "$tmp/c" 6 5
# shellcheck disable=SC2016  # bisect's shell expands it
"$exe" bisect --source "$tmp/c" --case "$case_name" --build "$build" --repeats 8 \
  --run '"$DLBENCH_BISECT_BUILD_DIR/benchmarks/bench_toy" --benchmark_min_time=0.02' \
  --good "$(commit "$tmp/c" 0)" --bad "$(commit "$tmp/c" 7)" -o "$tmp/c.md" 2>"$tmp/c.log"
rc=$?
[[ $rc -eq 5 ]] || fail "scenario 3: exit $rc, want 5: $(cat "$tmp/c.log")"
grep -q "Undecided.*$(commit "$tmp/c" 5 | cut -c1-12), $(commit "$tmp/c" 6 | cut -c1-12)" \
  "$tmp/c.md" || fail "scenario 3 does not name both candidates: $(cat "$tmp/c.md")"
leftovers "$tmp/c"

# 4. Commit 3, the first one git tries, is noisy: skipped as such, commit 5 still named.
make_repo "$tmp/n" 5 0 3
bisect "$tmp/n" --good HEAD~7 --bad HEAD -o "$tmp/n.md" 2>"$tmp/n.log"
rc=$?
[[ $rc -eq 0 ]] || fail "noisy step: exit $rc, want 0: $(cat "$tmp/n.log")"
grep -q "First bad commit\*\*: $(commit "$tmp/n" 5)" "$tmp/n.md" ||
  fail "noisy step: commit 5 not named: $(cat "$tmp/n.md")"
short3=$(commit "$tmp/n" 3 | cut -c1-12)
grep -q "Skipped: 1: $short3 (not significantly different from either: noisy)" "$tmp/n.md" ||
  fail "noisy step: commit 3 not skipped as noisy: $(cat "$tmp/n.md")"
leftovers "$tmp/n"

# 5. A neighbour's load from the third run on (the good endpoint's re-run reads 71% slower): the
# machine is not steady, one line, exit 4, no report.
# shellcheck disable=SC2016  # bisect's shell expands it
load_run='n=$(($(cat "$DLBENCH_BISECT_BUILD_DIR/runs" 2>/dev/null || echo 0) + 1)); \
echo $n >"$DLBENCH_BISECT_BUILD_DIR/runs"; [ $n -ge 3 ] && export TOY_LOAD=1.71; \
"$DLBENCH_BISECT_BUILD_DIR/benchmarks/bench_toy"'
bisect "$tmp/a" --good HEAD~7 --bad HEAD --run "$load_run" >"$tmp/s.out" 2>"$tmp/s.log"
rc=$?
[[ $rc -eq 4 ]] || fail "not steady: exit $rc, want 4: $(cat "$tmp/s.log")"
short0=$(commit "$tmp/a" 0 | cut -c1-12)
grep -q "the machine is not steady: the good endpoint $short0 read .*, then .* (+71" "$tmp/s.log" ||
  fail "not steady: $(cat "$tmp/s.log")"
[[ ! -s "$tmp/s.out" ]] || fail "not steady: a report on stdout"
leftovers "$tmp/a"

# 6. Good and bad both fast: no regression to bisect, one line, exit 4.
bisect "$tmp/a" --good "$(commit "$tmp/a" 0)" --bad "$(commit "$tmp/a" 3)" >"$tmp/d.out" \
  2>"$tmp/d.log"
rc=$?
[[ $rc -eq 4 ]] || fail "not reproduced: exit $rc, want 4: $(cat "$tmp/d.log")"
grep -q 'does not reproduce' "$tmp/d.log" || fail "not reproduced: $(cat "$tmp/d.log")"
[[ ! -s "$tmp/d.out" ]] || fail "not reproduced: a report on stdout"
leftovers "$tmp/a"

# 7. Bad input: one line, exit 1, nothing left.
one_line() {  # what, log
  local rc=$1 what=$2 log=$3
  [[ $rc -eq 1 ]] || fail "$what: exit $rc, want 1: $(cat "$log")"
  [[ $(grep -vc '^dlbench-report: bisect: good' "$log") -eq 1 ]] || fail "$what: not one line: $(cat "$log")"
}
bisect "$tmp/a" --good nosuchrev --bad HEAD 2>"$tmp/e1.log"
one_line $? "unknown revision" "$tmp/e1.log"
grep -q "unknown revision 'nosuchrev'" "$tmp/e1.log" || fail "unknown revision: $(cat "$tmp/e1.log")"
leftovers "$tmp/a"
"$exe" bisect --source "$tmp/a" --case toy/cpu/native/nosuch --build "$build" --repeats 8 \
  --good HEAD~7 --bad HEAD -- --benchmark_min_time=0.02 2>"$tmp/e2.log"
one_line $? "case not in the family" "$tmp/e2.log"
grep -q 'not in the run' "$tmp/e2.log" || fail "case not in the family: $(cat "$tmp/e2.log")"
# The line names the binary and the filter it ran, and asks whether the case is one of the family.
grep -q "bench_toy --benchmark_filter='.*nosuch.*' ran no case (is toy/cpu/native/nosuch a case of bench_toy?)" \
  "$tmp/e2.log" || fail "case not in the family, binary and filter: $(cat "$tmp/e2.log")"
leftovers "$tmp/a"
mkdir "$tmp/nogit"
bisect "$tmp/nogit" --good HEAD~1 --bad HEAD 2>"$tmp/e3.log"
one_line $? "no repository" "$tmp/e3.log"
grep -q 'not inside a git repository' "$tmp/e3.log" || fail "no repository: $(cat "$tmp/e3.log")"
bisect "$tmp/a" --good HEAD --bad HEAD~3 2>"$tmp/e4.log"
one_line $? "reversed range" "$tmp/e4.log"
leftovers "$tmp/a"
bisect "$tmp/a" --good HEAD~1 --bad HEAD --repeats 3 2>"$tmp/e5.log"
one_line $? "too few repetitions" "$tmp/e5.log"
leftovers "$tmp/a"

# 8. Interrupted while a step builds: exit 130, the worktree removed, the build's processes gone.
"$exe" bisect --source "$tmp/a" --case "$case_name" --good HEAD~7 --bad HEAD \
  --build "sleep 30 & echo \$! >$tmp/sleep.pid; wait" 2>"$tmp/f.log" &
pid=$!
for _ in $(seq 100); do [[ -s "$tmp/sleep.pid" ]] && break; sleep 0.1; done
[[ -s "$tmp/sleep.pid" ]] || fail "interrupt: the build never started"
kill -INT $pid
wait $pid
rc=$?
[[ $rc -eq 130 ]] || fail "interrupt: exit $rc, want 130: $(cat "$tmp/f.log")"
grep -q 'interrupted' "$tmp/f.log" || fail "interrupt: $(cat "$tmp/f.log")"
# Gone, or a zombie where nothing reaps orphans (a container's init).
state=$(ps -o stat= -p "$(cat "$tmp/sleep.pid")" 2>/dev/null)
[[ -z "$state" || "$state" == Z* ]] || fail "interrupt: the build's process lives on ($state)"
leftovers "$tmp/a"
echo "bisect: all checks passed"
