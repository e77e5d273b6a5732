# FindQwt.cmake — find Qwt (6.x) built for Qt 6.
#
# Usage (Qt 6 must be found first; this module only links to its targets):
#
#   find_package(Qt6 REQUIRED COMPONENTS Widgets Svg OpenGLWidgets)
#   list(APPEND CMAKE_MODULE_PATH ${PROJECT_SOURCE_DIR}/cmake)
#   find_package(Qwt 6.3 REQUIRED)
#   target_link_libraries(app PRIVATE Qwt::Qwt)
#
# Search order:
#   1. LIVEDRP_QWT_PREFIX (CMake cache variable, then environment variable)
#   2. /opt/livedrp/qwt-6.3-qt6 — where installer/bootstrap builds upstream Qwt
#      (include/qwt_plot.h, lib/libqwt.so)
#   3. the usual system paths — e.g. Debian's libqwt-qt6-dev
#      (/usr/include/qwt/qwt_plot.h, libqwt-qt6.so)
#
# A library built against Qt 5 (e.g. Debian's libqwt-qt5.so, or a Qt 5 build of
# upstream's plain libqwt.so) is never accepted: its name is not searched for
# and every candidate's ELF dependencies are checked for libQt5Core.
#
# Defines:
#   Qwt_FOUND, Qwt_VERSION, Qwt_INCLUDE_DIR, Qwt_LIBRARY, Qwt_LIBRARY_DIR
#   Qwt::Qwt  IMPORTED shared library target. Its IMPORTED_LOCATION is an
#             absolute path, so CMake puts its directory into the build RPATH
#             and executables run without LD_LIBRARY_PATH. For installed
#             executables add ${Qwt_LIBRARY_DIR} to INSTALL_RPATH (or set
#             CMAKE_INSTALL_RPATH_USE_LINK_PATH ON).

# Not cmake_minimum_required(): a find module runs in the caller's scope and
# must not reset the caller's policies.
if(CMAKE_VERSION VERSION_LESS 3.25)
    message(FATAL_ERROR "FindQwt.cmake needs CMake >= 3.25 (find_library VALIDATOR)")
endif()
include(FindPackageHandleStandardArgs)

set(LIVEDRP_QWT_PREFIX "$ENV{LIVEDRP_QWT_PREFIX}" CACHE PATH
    "Prefix of a Qwt installation built for Qt 6 (searched before the system)")

set(_qwt_hints)
foreach(_p IN ITEMS "${LIVEDRP_QWT_PREFIX}" "$ENV{LIVEDRP_QWT_PREFIX}" /opt/livedrp/qwt-6.3-qt6)
    if(_p)
        list(APPEND _qwt_hints "${_p}")
    endif()
endforeach()
list(REMOVE_DUPLICATES _qwt_hints)

# Reject libraries that were linked against Qt 5. The DT_NEEDED names
# ("libQt5Core.so.5") appear as plain strings in the .so file.
function(_qwt_reject_qt5 result candidate)
    file(STRINGS "${candidate}" _qt5 LIMIT_COUNT 1 REGEX "libQt5Core\\.so")
    if(_qt5)
        set(${result} FALSE PARENT_SCOPE)
        if(NOT Qwt_FIND_QUIETLY)
            message(STATUS "FindQwt: ignoring ${candidate} (built for Qt 5)")
        endif()
    endif()
endfunction()

# Changing LIVEDRP_QWT_PREFIX (cache or environment) in an existing build tree
# must search again instead of keeping the cached result of the old prefix.
set(_qwt_search_key "${_qwt_hints}")
if(DEFINED _Qwt_SEARCH_KEY AND NOT _Qwt_SEARCH_KEY STREQUAL _qwt_search_key)
    unset(Qwt_LIBRARY CACHE)
    unset(Qwt_INCLUDE_DIR CACHE)
endif()
set(_Qwt_SEARCH_KEY "${_qwt_search_key}" CACHE INTERNAL "Qwt search hints of the last run")

# Library first. The hinted prefixes are searched before the system paths
# (HINTS come first); NAMES_PER_DIR makes a prefix's libqwt.so win over a
# system libqwt-qt6.so. Debian's Qt 5 library is called libqwt-qt5.so and is
# therefore never matched; a Qt 5 build named libqwt.so is rejected by the
# validator and the search goes on.
find_library(Qwt_LIBRARY
    NAMES qwt-qt6 qwt
    NAMES_PER_DIR
    HINTS ${_qwt_hints}
    PATH_SUFFIXES lib lib64
    VALIDATOR _qwt_reject_qt5
    DOC "Qwt library built for Qt 6")

# Then the headers, looked for first in the prefix the library came from
# (<prefix>/lib/libqwt.so or <prefix>/lib/<multiarch>/libqwt-qt6.so), so that
# headers and library always belong together.
set(_qwt_lib_prefixes)
if(Qwt_LIBRARY)
    get_filename_component(_qwt_libdir "${Qwt_LIBRARY}" DIRECTORY)
    get_filename_component(_qwt_p1 "${_qwt_libdir}" DIRECTORY)
    get_filename_component(_qwt_p2 "${_qwt_p1}" DIRECTORY)
    set(_qwt_lib_prefixes "${_qwt_p1}" "${_qwt_p2}")
endif()
find_path(Qwt_INCLUDE_DIR
    NAMES qwt_plot.h
    HINTS ${_qwt_lib_prefixes} ${_qwt_hints}
    PATH_SUFFIXES include include/qwt include/qwt-qt6 qwt qwt-qt6
    DOC "Directory containing qwt_plot.h")

# Version from qwt_global.h:  #define QWT_VERSION_STR   "6.3.0"
unset(Qwt_VERSION)
if(Qwt_INCLUDE_DIR AND EXISTS "${Qwt_INCLUDE_DIR}/qwt_global.h")
    file(STRINGS "${Qwt_INCLUDE_DIR}/qwt_global.h" _qwt_version_line
         REGEX "^#define[ \t]+QWT_VERSION_STR[ \t]+\"[^\"]+\"")
    if(_qwt_version_line MATCHES "\"([^\"]+)\"")
        set(Qwt_VERSION "${CMAKE_MATCH_1}")
    endif()
endif()

find_package_handle_standard_args(Qwt
    REQUIRED_VARS Qwt_LIBRARY Qwt_INCLUDE_DIR
    VERSION_VAR Qwt_VERSION
    HANDLE_VERSION_RANGE
    REASON_FAILURE_MESSAGE
        "Qwt for Qt 6 is installed by installer/bootstrap (or point LIVEDRP_QWT_PREFIX at one).")

if(Qwt_FOUND)
    # Absolute, symlink-resolved location: stable, and its directory ends up in
    # the build RPATH.
    get_filename_component(_qwt_lib_real "${Qwt_LIBRARY}" REALPATH)
    get_filename_component(Qwt_LIBRARY_DIR "${_qwt_lib_real}" DIRECTORY)
    set(Qwt_INCLUDE_DIRS "${Qwt_INCLUDE_DIR}")
    set(Qwt_LIBRARIES Qwt::Qwt)

    if(NOT TARGET Qwt::Qwt)
        foreach(_t IN ITEMS Qt6::Widgets Qt6::Svg Qt6::OpenGLWidgets)
            if(NOT TARGET ${_t})
                message(WARNING "FindQwt: ${_t} is not defined; call "
                    "find_package(Qt6 COMPONENTS Widgets Svg OpenGLWidgets) before find_package(Qwt)")
            endif()
        endforeach()

        add_library(Qwt::Qwt SHARED IMPORTED)
        set_target_properties(Qwt::Qwt PROPERTIES
            IMPORTED_LOCATION "${_qwt_lib_real}"
            INTERFACE_INCLUDE_DIRECTORIES "${Qwt_INCLUDE_DIR}"
            # Qwt's own qwt.prf adds QWT_DLL for a shared Qwt (QwtDll).
            INTERFACE_COMPILE_DEFINITIONS QWT_DLL
            INTERFACE_LINK_LIBRARIES "Qt6::Widgets;Qt6::Svg;Qt6::OpenGLWidgets")
    endif()
endif()

mark_as_advanced(Qwt_INCLUDE_DIR Qwt_LIBRARY)
unset(_qwt_hints)
unset(_qwt_search_key)
unset(_qwt_lib_prefixes)
unset(_qwt_libdir)
unset(_qwt_p1)
unset(_qwt_p2)
unset(_qwt_lib_real)
unset(_qwt_version_line)
