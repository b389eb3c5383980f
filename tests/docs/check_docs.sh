#!/usr/bin/env bash
# Keeps the documentation true: scans README.md and docs/**/*.md for
#   (a) every --dlb_<name> flag: some built benchmark binary must print it in its --dlb_help;
#   (b) every binary named (bench_<x>, dlbench-report, dlbench-dataset): it must be in the build,
#       and built;
#   (c) every repository path in backticks, a code block or a link: it must exist in the source
#       tree. A path in code counts when it starts with a top-level folder (benchmarks/ fixtures/
#       kernels/ reports/ tools/ tests/ docs/ .ci/ .github/); a link counts when it is relative,
#       and is resolved from the page's folder. Globs and placeholders (<family>, *, {a,b}, $VAR)
#       are skipped, and so is reports/latest/, which the main job writes and git ignores;
#   (d) the other way round: every flag a built benchmark prints in its --dlb_help is in
#       docs/flags.md.
# A binary this build does not have (its backend is off) is skipped, and so are the flags only it
# defines; a flag whose feature this build lacks is skipped (the BINARIES file names it).
#
#   check_docs.sh SOURCE_DIR BINARIES
#
# BINARIES (written by tests/docs/CMakeLists.txt) has one line per binary, "<name> <path>", the
# path "-" when this build does not have it, and "flag <name> -" per flag whose feature is off.
# Prints one line per problem, "file:line: what", and exits 1 when there is any; 0 otherwise.
set -euo pipefail

if [[ $# -ne 2 ]]; then
  echo "usage: $0 SOURCE_DIR BINARIES" >&2
  exit 2
fi
src=$1
list=$(realpath "$2")
cd "$src"

docs=(README.md)
while IFS= read -r -d '' f; do docs+=("$f"); done < <(find docs -name '*.md' -print0 | sort -z)

declare -A bin_path=() built=() absent_flag=() help_flags=()
while read -r name path rest; do
  [[ -z "$name" ]] && continue
  if [[ "$name" == flag ]]; then
    absent_flag[$path]=1
  else
    bin_path[$name]=$path
  fi
done <"$list"

problems=()
problem() { problems+=("$1"); }

# ---- the build: which binaries exist, and the flags each prints --------------------------------
for name in "${!bin_path[@]}"; do
  path=${bin_path[$name]}
  [[ "$path" == - ]] && continue
  [[ -x "$path" ]] && built[$name]=1
done

# A DLB_* variable in the caller's environment must not change what --dlb_help prints (a malformed
# one would even stop it).
clean_env=()
while IFS= read -r var; do clean_env+=(-u "$var"); done < <(compgen -e | grep '^DLB_' || true)

helped=()
for name in $(printf '%s\n' "${!built[@]}" | grep '^bench_' | sort); do
  if ! out=$(env "${clean_env[@]}" timeout 120 "${bin_path[$name]}" --dlb_help 2>&1); then
    problem "$name: --dlb_help failed: $(head -n 1 <<<"$out")"
    continue
  fi
  helped+=("$name")
  while read -r flag; do help_flags[$flag]=1; done < <(grep -oP '^\s*--dlb_\K[a-z0-9_]+(?==)' <<<"$out")
done

# The binary that defines a family flag: a benchmarks/ source holding its name as a string.
owners() {
  local f
  grep -rlF "\"$1\"" benchmarks 2>/dev/null | while read -r f; do
    f=${f#benchmarks/}
    f=${f%%/*}
    echo "bench_${f%.cpp}"
  done | sort -u
}

# ---- (a) flags ---------------------------------------------------------------------------------
flags_checked=0
flags_skipped=()
while IFS=: read -r file line match; do
  name=${match#--dlb_}
  flags_checked=$((flags_checked + 1))
  [[ "$name" == help ]] && continue  # the parser's own: prints the others
  [[ -n "${help_flags[$name]:-}" ]] && continue
  if [[ -n "${absent_flag[$name]:-}" ]]; then
    flags_skipped+=("--dlb_$name (its feature is not in this build)")
    continue
  fi
  mapfile -t own < <(owners "$name")
  all_absent=${#own[@]}
  for o in "${own[@]}"; do
    [[ "${bin_path[$o]:-}" == - ]] || all_absent=0
  done
  if [[ $all_absent -gt 0 ]]; then
    flags_skipped+=("--dlb_$name (${own[*]} not in this build)")
    continue
  fi
  unbuilt=()
  for o in "${own[@]}"; do
    [[ "${bin_path[$o]:-}" != - && -z "${built[$o]:-}" ]] && unbuilt+=("$o")
  done
  if [[ ${#unbuilt[@]} -gt 0 ]]; then
    problem "$file:$line: --dlb_$name: cannot be checked: ${unbuilt[*]}, which defines it, is not built"
    continue
  fi
  problem "$file:$line: --dlb_$name: no built benchmark prints it in --dlb_help (asked: ${helped[*]:-none})"
done < <(grep -HonP -- '--dlb_[a-z0-9][a-z0-9_]*' "${docs[@]}")

# ---- (b) binaries ------------------------------------------------------------------------------
bins_checked=0
bins_skipped=()
declare -A reported=()
while IFS=: read -r file line name; do
  bins_checked=$((bins_checked + 1))
  if [[ -z "${bin_path[$name]+set}" ]]; then
    problem "$file:$line: $name: no such binary (the build knows: $(printf '%s ' "${!bin_path[@]}" | tr ' ' '\n' | sort | xargs))"
  elif [[ "${bin_path[$name]}" == - ]]; then
    bins_skipped+=("$name")
  elif [[ -z "${built[$name]:-}" && -z "${reported[$name]:-}" ]]; then
    reported[$name]=1
    problem "$file:$line: $name: in this build but not built (${bin_path[$name]}); build it, then run the test again"
  fi
done < <(grep -HonP '(?<![A-Za-z0-9_-])(bench_[a-z0-9][a-z0-9_]*|dlbench-report|dlbench-dataset)(?![A-Za-z0-9_-])' "${docs[@]}")

# ---- (c) paths ---------------------------------------------------------------------------------
# Candidates, one per line: file, line, kind (code or link), text. Code: every word of a fenced
# block and of an inline code span; link: the target of [text](target).
candidates() {
  awk '
    FNR == 1 { fence = 0 }
    /^[ \t]*```/ { fence = !fence; next }
    fence { n = split($0, w, /[ \t]+/); for (i = 1; i <= n; i++) if (w[i] != "") print FILENAME "\t" FNR "\tcode\t" w[i]; next }
    {
      s = $0
      while (match(s, /\]\([^) \t]+\)/)) {
        print FILENAME "\t" FNR "\tlink\t" substr(s, RSTART + 2, RLENGTH - 3)
        s = substr(s, RSTART + RLENGTH)
      }
      s = $0
      while (match(s, /`[^`]+`/)) {
        n = split(substr(s, RSTART + 1, RLENGTH - 2), w, /[ \t]+/)
        for (i = 1; i <= n; i++) if (w[i] != "") print FILENAME "\t" FNR "\tcode\t" w[i]
        s = substr(s, RSTART + RLENGTH)
      }
    }' "$@"
}

paths_checked=0
top='^(benchmarks|fixtures|kernels|reports|tools|tests|docs|\.ci|\.github)/'
while IFS=$'\t' read -r file line kind text; do
  if [[ "$kind" == link ]]; then
    [[ "$text" =~ ^[a-z][a-z0-9+.-]*: || "$text" == \#* ]] && continue  # a URL, an anchor
    target=${text%%#*}
    resolved=$(realpath -m --relative-to=. "$(dirname "$file")/$target")
    paths_checked=$((paths_checked + 1))
    [[ -e "$resolved" ]] || problem "$file:$line: link $text: $resolved does not exist"
    continue
  fi
  word=${text##*=}                    # --flag=path, VAR=path
  word=${word#[\(\"\']}
  word=${word%%[,;:\)\"\']*}
  word=${word%.}
  [[ "$word" =~ $top ]] || continue
  [[ "$word" =~ [\<\>\*\?\{\}\$\[\]\|] || "$word" == *...* ]] && continue  # glob, placeholder
  [[ "$word" == reports/latest/* || "$word" == reports/latest ]] && continue
  paths_checked=$((paths_checked + 1))
  [[ -e "$word" ]] || problem "$file:$line: path $word does not exist in the source tree"
done < <(candidates "${docs[@]}")

# ---- (d) every flag of the build is documented ------------------------------------------------
declare -A documented=()
while read -r name; do documented[$name]=1; done < <(grep -oP -- '--dlb_\K[a-z0-9][a-z0-9_]*' docs/flags.md)
for name in $(printf '%s\n' "${!help_flags[@]}" | sort); do
  [[ -n "${documented[$name]:-}" ]] || problem "docs/flags.md: --dlb_$name: printed by --dlb_help, not documented"
done

# ---- verdict -----------------------------------------------------------------------------------
echo "docs: ${#docs[@]} files; $flags_checked flag mentions (against --dlb_help of ${helped[*]:-none}),"\
  "$bins_checked binary mentions, $paths_checked paths checked"
if [[ ${#flags_skipped[@]} -gt 0 ]]; then
  echo "docs: skipped flags: $(printf '%s\n' "${flags_skipped[@]}" | sort -u | paste -sd ';' | sed 's/;/; /g')"
fi
if [[ ${#bins_skipped[@]} -gt 0 ]]; then
  echo "docs: skipped binaries not in this build: $(printf '%s\n' "${bins_skipped[@]}" | sort -u | xargs)"
fi
if [[ ${#problems[@]} -gt 0 ]]; then
  printf '%s\n' "${problems[@]}"
  echo "docs: ${#problems[@]} problem(s)"
  exit 1
fi
echo "docs: fine"
