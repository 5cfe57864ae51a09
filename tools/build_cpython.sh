#!/usr/bin/env bash
# Build a CPython from Debian's source package, to test the project on a second interpreter on a machine whose
# python3 is another (docs/reproducing-the-paper.md, "Interpreters and platforms").
#
#   bash tools/build_cpython.sh PREFIX WORK [SOURCE_PACKAGE [SUITE]]
#
# SOURCE_PACKAGE defaults to python3.13 and SUITE to trixie (Debian 13). The script downloads the source package
# with `apt-get source` through an apt configuration of its own under WORK (a deb-src entry for SUITE; the
# machine's own apt sources and lists are left as they are), unpacks it with Debian's patches applied (dpkg-source,
# from dpkg-dev), then runs `./configure --prefix=PREFIX --with-ensurepip=no && make -j"$(nproc)" && make install`
# (Debian's patch ensurepip-disabled.diff makes ensurepip refuse outside a virtual environment, so make install's
# last step, which seeds pip into PREFIX, would fail; `python -m venv` still seeds pip into each venv). The C headers of
# OpenSSL, zlib, libffi, bzip2, xz, SQLite and readline must be installed (Debian: libssl-dev zlib1g-dev libffi-dev
# libbz2-dev liblzma-dev libsqlite3-dev libreadline-dev), or pip and the standard library miss modules: the script
# checks the ones pip and the project need (ssl, zlib, ctypes, bz2, lzma, sqlite3) and fails if one is missing.
# It prints how long each step took. Then, for example:
#
#   PREFIX/bin/python3.13 -m venv VENV && VENV/bin/pip install --no-deps --require-hashes -r requirements/lock.txt ...
set -euo pipefail

if (($# < 2 || $# > 4)); then
    echo "usage: bash tools/build_cpython.sh PREFIX WORK [SOURCE_PACKAGE [SUITE]]  (default: python3.13 trixie)" >&2
    exit 2
fi
prefix=$(realpath -m "$1")
work=$(realpath -m "$2")
package=${3:-python3.13}
suite=${4:-trixie}
series=${package#python}
if ! [[ $series =~ ^3\.[0-9]+$ ]]; then
    echo "build_cpython.sh: SOURCE_PACKAGE must be a Debian CPython source package such as python3.13; got $package" >&2
    exit 2
fi
for tool in apt-get dpkg-source make gcc; do
    command -v "$tool" >/dev/null || {
        echo "build_cpython.sh: $tool not found (Debian: apt-get install dpkg-dev build-essential)" >&2
        exit 1
    }
done

elapsed() { echo "$((SECONDS - $1)) s"; }
start=$SECONDS

# An apt of our own: deb-src for SUITE only, its lists and cache under WORK.
apt_dir="$work/apt"
mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial" "$apt_dir/sources.list.d" "$work/src"
cat >"$apt_dir/sources.list.d/deb-src.sources" <<EOF
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: $suite
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
apt_opts=(-o "Dir::Etc::SourceList=/dev/null" -o "Dir::Etc::SourceParts=$apt_dir/sources.list.d"
    -o "Dir::State::Lists=$apt_dir/lists" -o "Dir::Cache=$apt_dir/cache" -o "APT::Sandbox::User=root")
step=$SECONDS
apt-get "${apt_opts[@]}" update -qq
cd "$work/src"
rm -rf "$package"-*/
apt-get "${apt_opts[@]}" source -qq "$package" >"$work/apt-source.log" 2>&1 || {
    cat "$work/apt-source.log" >&2
    exit 1
}
src_dir=$(find "$work/src" -maxdepth 1 -type d -name "$package-*" | head -n 1)
[[ -n $src_dir ]] || {
    echo "build_cpython.sh: apt-get source $package unpacked nothing under $work/src" >&2
    exit 1
}
echo "build_cpython.sh: downloaded and unpacked $(basename "$src_dir") from Debian $suite in $(elapsed "$step")"

cd "$src_dir"
step=$SECONDS
./configure --prefix="$prefix" --with-ensurepip=no >"$work/configure.log" 2>&1 || {
    tail -n 30 "$work/configure.log" >&2
    exit 1
}
echo "build_cpython.sh: configure in $(elapsed "$step") (log: $work/configure.log)"
step=$SECONDS
make -j"$(nproc)" >"$work/make.log" 2>&1 || {
    tail -n 30 "$work/make.log" >&2
    exit 1
}
echo "build_cpython.sh: make -j$(nproc) in $(elapsed "$step") (log: $work/make.log)"
step=$SECONDS
make install >"$work/install.log" 2>&1 || {
    tail -n 30 "$work/install.log" >&2
    exit 1
}
echo "build_cpython.sh: make install in $(elapsed "$step") (log: $work/install.log)"

python="$prefix/bin/python$series"
"$python" -c "import ssl, zlib, ctypes, bz2, lzma, sqlite3" || {
    echo "build_cpython.sh: $python lacks a module above; install its C headers (see this script's header) and rerun" >&2
    exit 1
}
echo "build_cpython.sh: $("$python" -VV | head -n 1) in $prefix; $(nproc) cores, $(elapsed "$start") in all"
