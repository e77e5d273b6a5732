# Packaging.cmake — the Debian package and the tarball of livedrp, with CPack:
#
#   cmake --build build --target package     # build/livedrp_VERSION_ARCH.deb and a .tar.gz
#   cd build && cpack -G DEB                  # the .deb alone
#   sudo apt install ./build/livedrp_*.deb
#
# Included from the root CMakeLists.txt after every target. The package holds what the targets'
# own install() rules install (the GUI, the engine tools, the stream publishers, the HDF5 filter
# plugin, the shipped geometries, the .desktop file and icon) and, from here:
#   - Qwt for Qt 6 when it is not the system's: Debian 12 has no Qwt for Qt 6, so installer/
#     bootstrap builds one into /opt/livedrp and the package carries a private copy in
#     lib/livedrp, where the programs' install RPATH ($ORIGIN/../lib/livedrp, root
#     CMakeLists.txt) finds it;
#   - the licence, where Debian keeps a package's (share/doc/livedrp/copyright).
# The Debian dependencies are what dpkg-shlibdeps (dpkg-dev) reads off the ELF files, so they
# follow the libraries this build linked (CUDA's runtime is linked statically: none for it).

set(LIVEDRP_PRIVATE_LIBDIR lib/livedrp)

if(TARGET Qwt::Qwt)
  get_target_property(_livedrp_qwt_file Qwt::Qwt IMPORTED_LOCATION)
  # A system Qwt (a later Debian's libqwt-qt6) comes from its own package, which dpkg-shlibdeps
  # names in Depends.
  if(NOT _livedrp_qwt_file MATCHES "^/usr/")
    # The programs ask for Qwt by its SONAME (libqwt.so.6.3 for upstream's build), so the copy
    # carries that name; reading it off the library keeps a rebuilt Qwt of another version right.
    set(_livedrp_qwt_soname "")
    if(CMAKE_READELF)
      execute_process(COMMAND ${CMAKE_READELF} -d ${_livedrp_qwt_file}
                      OUTPUT_VARIABLE _livedrp_qwt_dynamic ERROR_QUIET)
      if(_livedrp_qwt_dynamic MATCHES "\\(SONAME\\)[^[]*\\[([^]]+)\\]")
        set(_livedrp_qwt_soname ${CMAKE_MATCH_1})
      endif()
    endif()
    if(NOT _livedrp_qwt_soname)
      message(FATAL_ERROR "Packaging: cannot read the SONAME of ${_livedrp_qwt_file} "
                          "(readelf: '${CMAKE_READELF}')")
    endif()
    # install(FILES) gives 0644, as Debian wants shared libraries.
    install(FILES ${_livedrp_qwt_file} DESTINATION ${LIVEDRP_PRIVATE_LIBDIR}
            RENAME ${_livedrp_qwt_soname})
    message(STATUS "livedrp: packages carry ${_livedrp_qwt_file} as "
                   "${LIVEDRP_PRIVATE_LIBDIR}/${_livedrp_qwt_soname}")
  endif()
endif()

# HDF5 loads the filter plugin from lib/hdf5/plugins; it needs nothing of lib/livedrp.
if(TARGET livedrp_h5filter)
  set_target_properties(livedrp_h5filter PROPERTIES INSTALL_RPATH "")
endif()

install(FILES ${PROJECT_SOURCE_DIR}/LICENSE DESTINATION share/doc/livedrp RENAME copyright)

set(CPACK_PACKAGE_NAME livedrp)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_VENDOR "the livedrp authors")
set(CPACK_PACKAGE_CONTACT "the livedrp authors")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "live data-reduction monitor for X-ray area detectors (Qt 6 GUI and engine)")
string(CONCAT CPACK_PACKAGE_DESCRIPTION
    "A Qt 6 desktop application that embeds a processing engine (CUDA on the GPU when built with "
    "it, and a CPU backend): it takes detector events from a simulated, replayed or live stream, "
    "calibrates, compresses, integrates them azimuthally and finds Bragg peaks, and publishes "
    "what it measures over ZeroMQ. The headless tools livedrp-engine, livedrp-bench and "
    "livedrp-codec and the HDF5 filter plugin of its codec are included.")
set(CPACK_RESOURCE_FILE_LICENSE ${PROJECT_SOURCE_DIR}/LICENSE)
set(CPACK_GENERATOR DEB TGZ)
set(CPACK_STRIP_FILES ON)

# livedrp_VERSION_ARCH.deb, as apt and dpkg name packages.
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# Programs the tools run or that read what they write, not needed to start them.
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "openmpi-bin, hdf5-tools, hdf5-filter-plugin, bitshuffle")

include(CPack)
