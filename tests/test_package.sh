#!/usr/bin/env bash
# test_package: the .deb of this build (cmake/Packaging.cmake) unpacked into a scratch root gives
# programs that start from there, with nothing of the build machine: CPack packs a copy of the
# build's install in a temporary folder, `dpkg-deb -I` names the package, its version and its
# dependencies, `dpkg-deb -x` unpacks it, and from that root every program answers --version, the
# engine runs 20 simulated events on the CPU backend, and the GUI resolves Qwt to the package's
# own copy (never /opt/livedrp, where installer/bootstrap builds it).
#
# Run through CTest (tests/CMakeLists.txt names cpack, the build, the version and whether the GUI
# is built). Exit 77 (CTest: skipped) where Debian's packaging tools are missing.
set -euo pipefail

fail() {
    echo "test_package: FAIL: $*" >&2
    exit 1
}

: "${LIVEDRP_CMAKE_COMMAND:?run through CTest (it names cmake)}"
: "${LIVEDRP_CPACK_COMMAND:?run through CTest (it names cpack)}"
: "${LIVEDRP_BUILD_DIR:?run through CTest (it names the build)}"
: "${LIVEDRP_VERSION:?run through CTest (it names the version)}"
for tool in dpkg-deb dpkg-shlibdeps file ldd; do
    if ! command -v "$tool" >/dev/null; then
        echo "test_package: SKIP: $tool not found (installer/bootstrap installs it)"
        exit 77
    fi
done

scratch=$(mktemp -d "${TMPDIR:-/tmp}/livedrp-test-package.XXXXXX")
trap 'rm -rf "$scratch"' EXIT

# The build's install, into a copy under /usr as the package lays it out. Packed from there: left
# to install the build itself, CPack would first build every target of the build folder
# (`preinstall`), which is not a test's to do.
DESTDIR="$scratch/stage" "$LIVEDRP_CMAKE_COMMAND" --install "$LIVEDRP_BUILD_DIR" --prefix /usr \
    --strip >"$scratch/install.log" 2>&1 ||
    { cat "$scratch/install.log" >&2; fail "cmake --install failed"; }
"$LIVEDRP_CPACK_COMMAND" -G DEB --config "$LIVEDRP_BUILD_DIR/CPackConfig.cmake" \
    -B "$scratch/out" -D CPACK_INSTALL_CMAKE_PROJECTS= \
    -D "CPACK_INSTALLED_DIRECTORIES=$scratch/stage;." >"$scratch/cpack.log" 2>&1 ||
    { cat "$scratch/cpack.log" >&2; fail "cpack -G DEB failed"; }
debs=("$scratch"/out/livedrp_*.deb)
[[ ${#debs[@]} -eq 1 && -f ${debs[0]} ]] || fail "expected one livedrp_*.deb, found: ${debs[*]}"
deb=${debs[0]}
echo "test_package: built $(basename "$deb")"

dpkg-deb -I "$deb"
field() { dpkg-deb -f "$deb" "$1"; }
[[ $(field Package) == livedrp ]] || fail "Package is '$(field Package)', not livedrp"
[[ $(field Version) == "$LIVEDRP_VERSION" ]] ||
    fail "Version is '$(field Version)', not $LIVEDRP_VERSION"
depends=$(field Depends)
# dpkg-shlibdeps ran: the C library and ZeroMQ are libraries every engine tool links.
[[ $depends == *libc6* && $depends == *libzmq5* ]] || fail "Depends lacks libc6/libzmq5: '$depends'"

dpkg-deb -x "$deb" "$scratch/root"
root=$scratch/root/usr
for path in share/doc/livedrp/copyright lib/hdf5/plugins/liblivedrp_h5filter.so \
    share/livedrp/geometry/epix10ka2m.poni; do
    [[ -f $root/$path ]] || fail "the package lacks /usr/$path"
done

# Nothing of the build tree's environment: no library path, no display.
run() { env -u LD_LIBRARY_PATH QT_QPA_PLATFORM=offscreen "$@"; }

programs=(livedrp-engine livedrp-bench livedrp-codec)
if [[ ${LIVEDRP_GUI:-0} == 1 ]]; then
    programs=(livedrp "${programs[@]}")
    for path in share/applications/livedrp.desktop share/icons/hicolor/scalable/apps/livedrp.svg; do
        [[ -f $root/$path ]] || fail "the package lacks /usr/$path"
    done
    [[ $depends == *libqt6widgets6* ]] || fail "Depends lacks Qt 6 Widgets: '$depends'"
fi
# The stream publishers are installed with the test suites (tests/CMakeLists.txt).
for extra in livedrp-dectris-publisher livedrp-sls-publisher; do
    if [[ -x $root/bin/$extra ]]; then programs+=("$extra"); fi
done
for program in "${programs[@]}"; do
    [[ -x $root/bin/$program ]] || fail "the package lacks /usr/bin/$program"
    # stdout only: Qt may warn on stderr (XDG_RUNTIME_DIR unset, as for root).
    out=$(run "$root/bin/$program" --version 2>"$scratch/stderr") ||
        fail "$program --version: $out $(cat "$scratch/stderr")"
    [[ $out == "$program $LIVEDRP_VERSION"* ]] ||
        fail "$program --version says '$out', not '$program $LIVEDRP_VERSION'"
    echo "test_package: $out"
done

# A short real run: 20 simulated ePix10ka2M events through the CPU backend, publishing nowhere.
out=$(run "$root/bin/livedrp-engine" run --source sim:epix10ka2m --events 20 --rate 0 \
    --backend cpu --publish '' 2>&1) || fail "livedrp-engine run: $out"
echo "$out"
grep -q '^events in: 20, processed: 20, dropped: 0' <<<"$out" ||
    fail "the run's summary does not say 20 events processed"

# Every library each program needs resolves, and none from /opt/livedrp: Qwt is the package's.
for program in "${programs[@]}"; do
    libs=$(run ldd "$root/bin/$program") || fail "ldd $program: $libs"
    if grep -q 'not found' <<<"$libs"; then fail "$program: unresolved libraries: $libs"; fi
    if grep -q '/opt/livedrp' <<<"$libs"; then fail "$program: a library from /opt/livedrp: $libs"; fi
done
if [[ ${LIVEDRP_GUI:-0} == 1 ]]; then
    qwt=$(run ldd "$root/bin/livedrp" | grep libqwt || true)
    echo "test_package: livedrp's Qwt: $qwt"
    # Qwt built outside the system travels in lib/livedrp and must be found there; a system Qwt
    # (a later Debian's libqwt-qt6) is a dependency instead.
    if compgen -G "$root/lib/livedrp/libqwt*" >/dev/null; then
        [[ $qwt == *"=> $scratch/root/"* ]] || fail "livedrp's Qwt is not the package's own: $qwt"
    fi
fi
echo "test_package: PASS"
