#!/usr/bin/env bash
# A fresh Debian root to try dlbench as a new user would: `debootstrap --variant=minbase`, then
# commands run in it with chroot, /proc, /sys, /dev (+ pts, shm) mounted and the host's CUDA toolkit
# bind-mounted read-only. Every mount is undone on every exit path (EXIT, INT, TERM), in reverse
# order, and the root is never deleted while anything under it is still mounted.
#
#   tools/fresh-root.sh create [--suite S] [--mirror URL] [--cache-dir DIR] ROOT
#   tools/fresh-root.sh run [--cuda DIR|none] [--apt-cache DIR] [--bind SRC:DST[:ro]]... ROOT [--] [CMD...]
#   tools/fresh-root.sh remove ROOT
#
# By hand, as a newcomer on a minimal Debian 12 with the CUDA toolkit:
#   tools/fresh-root.sh create /var/tmp/newbie
#   git clone . /var/tmp/newbie/root/dlbench
#   tools/fresh-root.sh run /var/tmp/newbie -- bash -l     # cd /root/dlbench; tools/dlbench-test.sh
#   tools/fresh-root.sh remove /var/tmp/newbie
#
# create: --suite (bookworm), --mirror (the host's apt source for that suite, else deb.debian.org),
#   --cache-dir: debootstrap keeps the downloaded .debs there for the next create (the root is
#   still installed from scratch).
# run: CMD (default: an interactive `bash -l`) runs as root with a clean environment (HOME=/root,
#   a standard PATH, LANG=C.UTF-8, TERM). --cuda: the toolkit to mount read-only at
#   /usr/local/cuda (default /usr/local/cuda when present). --apt-cache: a host folder mounted on
#   the root's /var/cache/apt/archives, so repeated roots download each .deb once. --bind: more
#   mounts. Processes the command left running in the root are ended before unmounting.
#   Exits with CMD's status.
# remove: unmounts whatever is still mounted under ROOT (deepest first) and deletes it; refuses if
#   a mount cannot be undone or ROOT was not made by `create`.
# Needs root, debootstrap (apt-get install debootstrap) and, on a non-Debian host, the Debian
# archive keyring (debian-archive-keyring).
set -euo pipefail

prog=fresh-root
marker=.dlbench-fresh-root
die() { echo "$prog: $*" >&2; exit 2; }
say() { echo "$prog: $*" >&2; }

usage() { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; }

# ---- mounts ------------------------------------------------------------------------------------

# Mount points at or under $1, as listed in /proc/self/mountinfo (in mount order), decoded.
mounts_under() {
  local root=$1 mp
  while read -r _ _ _ _ mp _; do
    mp=$(printf '%b' "$mp")  # mountinfo escapes space, tab, newline and \ as \ooo
    if [[ "$mp" == "$root" || "$mp" == "$root"/* ]]; then printf '%s\n' "$mp"; fi
  done </proc/self/mountinfo
}

# Processes whose root directory is $1: what a command left behind in the chroot.
procs_in() {
  local root=$1 p r
  for p in /proc/[0-9]*; do
    r=$(readlink "$p/root" 2>/dev/null) || continue
    if [[ "$r" == "$root" ]]; then echo "${p#/proc/}"; fi
  done
}

end_procs_in() {
  local root=$1 pids i
  pids=$(procs_in "$root")
  [[ -z "$pids" ]] && return 0
  say "ending processes left in $root: $(echo $pids)"
  kill -TERM $pids 2>/dev/null || true
  for i in 1 2 3 4 5 6 7 8 9 10; do
    pids=$(procs_in "$root"); [[ -z "$pids" ]] && return 0
    sleep 0.5
  done
  kill -KILL $pids 2>/dev/null || true
  sleep 0.5
}

# Unmounts everything at or under $1: the last-mounted first, so stacked and nested mounts come off
# in reverse order. Returns non-zero if something stays mounted.
unmount_all_under() {
  local root=$1 left before i
  end_procs_in "$root"
  for i in 1 2 3 4 5; do
    mapfile -t left < <(mounts_under "$root" | tac)
    [[ ${#left[@]} -eq 0 ]] && return 0
    before=${#left[@]}
    local mp
    for mp in "${left[@]}"; do umount "$mp" 2>/dev/null || true; done
    mapfile -t left < <(mounts_under "$root")
    [[ ${#left[@]} -eq 0 ]] && return 0
    [[ ${#left[@]} -lt $before ]] || sleep 1
  done
  say "still mounted under $root:"; printf '  %s\n' "${left[@]}" >&2
  return 1
}

# ---- helpers -----------------------------------------------------------------------------------

need_root() { [[ $(id -u) -eq 0 ]] || die "must run as root (debootstrap, mount, chroot)"; }

canon_root() {
  [[ -n "${1:-}" ]] || die "no ROOT given (see --help)"
  local r; r=$(realpath -m -- "$1")
  [[ "$r" != "/" ]] || die "ROOT must not be /"
  echo "$r"
}

# The first URI the host's apt sources give for suite $1 (deb822 .sources and one-line .list).
host_mirror() {
  local suite=$1 f
  for f in /etc/apt/sources.list.d/*.sources; do
    [[ -r "$f" ]] || continue
    awk -v suite="$suite" '
      function flush() { if (ok && uri != "" && !done) { print uri; done = 1 } ok = 0; uri = "" }
      /^[ \t]*$/ { flush(); next }
      tolower($1) == "uris:" { uri = $2 }
      tolower($1) == "suites:" { for (i = 2; i <= NF; i++) if ($i == suite) ok = 1 }
      tolower($1) == "enabled:" && tolower($2) == "no" { uri = "" }
      END { flush() }' "$f"
  done
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [[ -r "$f" ]] || continue
    sed -e 's/\[[^]]*\]//' "$f" | awk -v suite="$suite" '$1 == "deb" && $3 == suite { print $2 }'
  done
}

# ---- create ------------------------------------------------------------------------------------

create_root=""
cmd_create() {
  local suite=bookworm mirror="" cache="" root
  while [[ $# -gt 0 ]]; do
    case $1 in
      --suite) suite=$2; shift 2 ;;
      --mirror) mirror=$2; shift 2 ;;
      --cache-dir) cache=$2; shift 2 ;;
      -h|--help) usage; exit 0 ;;
      -*) die "create: unknown option $1" ;;
      *) break ;;
    esac
  done
  [[ $# -eq 1 ]] || die "create: one ROOT expected"
  root=$(canon_root "$1")
  need_root
  command -v debootstrap >/dev/null || die "debootstrap is not installed (apt-get install debootstrap)"
  if [[ -e "$root" ]] && [[ -n "$(ls -A "$root")" ]]; then die "$root exists and is not empty"; fi
  [[ -n "$mirror" ]] || mirror=$(host_mirror "$suite" | sed -n 1p)
  [[ -n "$mirror" ]] || mirror=http://deb.debian.org/debian
  local security; security=$(host_mirror "$suite-security" | sed -n 1p)
  [[ -n "$security" ]] || security=http://deb.debian.org/debian-security

  mkdir -p "$root"
  # The root's / as a real system has it: a folder made by `mktemp -d` is 0700, and then no user
  # but root could reach anything in it (a server a test starts as an unprivileged user, say).
  chmod 755 "$root"
  touch "$root/$marker"
  # debootstrap mounts /proc and /sys in the target while it works; a failure or a signal must
  # not leave them behind.
  create_root=$root
  trap 'unmount_all_under "$create_root" || true' EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  local args=(--variant=minbase)
  if [[ -n "$cache" ]]; then mkdir -p "$cache"; args+=(--cache-dir="$(realpath "$cache")"); fi
  say "debootstrap $suite from $mirror into $root"
  debootstrap "${args[@]}" "$suite" "$root" "$mirror" >"$root.debootstrap.log" 2>&1 || {
    tail -n 20 "$root.debootstrap.log" >&2
    die "debootstrap failed (log: $root.debootstrap.log)"
  }
  rm -f "$root.debootstrap.log"
  cat >"$root/etc/apt/sources.list" <<EOF
deb $mirror $suite main
deb $mirror $suite-updates main
deb $security $suite-security main
EOF
  # No daemon starts from a package's install script inside the root: nothing outlives a command.
  printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
  chmod 755 "$root/usr/sbin/policy-rc.d"
  unmount_all_under "$root"
  trap - EXIT INT TERM
  say "made $root ($(du -sh --one-file-system "$root" | cut -f1))"
}

# ---- run ---------------------------------------------------------------------------------------

mounted=()  # what this run mounted, in order
run_root=""
child=""

do_mount() {  # do_mount TARGET mount-args...
  local target=$1; shift
  mount "$@" "$target"
  mounted+=("$target")
}

run_cleanup() {
  local rc=$? i
  trap - EXIT INT TERM
  if [[ -n "$child" ]] && kill -0 "$child" 2>/dev/null; then
    kill -TERM "$child" 2>/dev/null || true
    wait "$child" 2>/dev/null || true
  fi
  end_procs_in "$run_root"
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
    umount "${mounted[i]}" 2>/dev/null || say "could not unmount ${mounted[i]}"
  done
  mounted=()
  # Anything the command mounted itself.
  unmount_all_under "$run_root" || rc=1
  exit "$rc"
}

cmd_run() {
  local cuda=/usr/local/cuda apt_cache="" binds=() root
  [[ -e /usr/local/cuda ]] || cuda=none
  while [[ $# -gt 0 ]]; do
    case $1 in
      --cuda) cuda=$2; shift 2 ;;
      --apt-cache) apt_cache=$2; shift 2 ;;
      --bind) binds+=("$2"); shift 2 ;;
      -h|--help) usage; exit 0 ;;
      --) die "run: ROOT comes before --" ;;
      -*) die "run: unknown option $1" ;;
      *) break ;;
    esac
  done
  [[ $# -ge 1 ]] || die "run: no ROOT given"
  root=$(canon_root "$1"); shift
  [[ "${1:-}" == "--" ]] && shift
  [[ $# -gt 0 ]] || set -- bash -l
  need_root
  [[ -f "$root/$marker" && -x "$root/bin/sh" ]] || die "$root is not a root made by '$prog create'"
  [[ -z "$(mounts_under "$root")" ]] || die "$root already has mounts (another run in progress?)"

  run_root=$root
  trap run_cleanup EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM

  do_mount "$root/proc" -t proc proc
  do_mount "$root/sys" -t sysfs -o ro,nosuid,nodev,noexec sysfs
  do_mount "$root/dev" --bind /dev
  mkdir -p "$root/dev/pts" "$root/dev/shm"
  # A private pts instance: /dev/ptmx resolves to it (Linux >= 4.7), so ptys work in the root
  # and the host's are untouched.
  do_mount "$root/dev/pts" -t devpts -o newinstance,ptmxmode=0666,mode=0620,gid=5 devpts
  do_mount "$root/dev/shm" -t tmpfs -o nosuid,nodev,mode=1777 shm
  if [[ "$cuda" != none ]]; then
    [[ -d "$cuda" ]] || die "--cuda $cuda: no such folder"
    mkdir -p "$root/usr/local/cuda"
    do_mount "$root/usr/local/cuda" --bind "$cuda"
    mount -o remount,bind,ro "$root/usr/local/cuda"
  fi
  if [[ -n "$apt_cache" ]]; then
    mkdir -p "$apt_cache/partial" "$root/var/cache/apt/archives"
    do_mount "$root/var/cache/apt/archives" --bind "$apt_cache"
    # apt downloads as its _apt user into partial/: give it that folder, as apt does its own.
    chroot "$root" chown _apt:root /var/cache/apt/archives/partial 2>/dev/null || true
  fi
  local b src dst ro
  for b in "${binds[@]}"; do
    IFS=: read -r src dst ro <<<"$b"
    [[ -n "$src" && -n "$dst" ]] || die "--bind $b: want SRC:DST[:ro]"
    mkdir -p "$root/$dst"
    do_mount "$root/$dst" --bind "$src"
    if [[ "$ro" == ro ]]; then mount -o remount,bind,ro "$root/$dst"; fi
  done
  cp -L /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true

  # In the background and waited for, so that a TERM sent to this script is handled at once (bash
  # runs traps only between foreground commands); stdin is passed on for interactive use.
  { exec 3<&0; } 2>/dev/null || exec 3</dev/null  # CI may run with stdin closed
  chroot "$root" /usr/bin/env -i HOME=/root TERM="${TERM:-dumb}" LANG=C.UTF-8 \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "$@" <&3 3<&- &
  child=$!
  local rc=0
  wait "$child" || rc=$?
  child=""
  exit "$rc"
}

# ---- remove ------------------------------------------------------------------------------------

cmd_remove() {
  [[ "${1:-}" == -h || "${1:-}" == --help ]] && { usage; exit 0; }
  [[ $# -eq 1 ]] || die "remove: one ROOT expected"
  local root; root=$(canon_root "$1")
  need_root
  [[ -e "$root" ]] || { say "$root: already gone"; return 0; }
  [[ -f "$root/$marker" ]] || die "$root was not made by '$prog create'; not deleting it"
  trap '' INT TERM  # finish unmounting before anything else
  unmount_all_under "$root" || die "not deleting $root while something under it is mounted"
  # Checked again right before deleting, and rm stays on the root's file system.
  [[ -z "$(mounts_under "$root")" ]] || die "not deleting $root: mounted again"
  rm -rf --one-file-system -- "$root"
  say "removed $root"
}

case "${1:-}" in
  create) shift; cmd_create "$@" ;;
  run) shift; cmd_run "$@" ;;
  remove) shift; cmd_remove "$@" ;;
  -h|--help|help) usage ;;
  *) usage >&2; exit 2 ;;
esac
