# install.cmake: headers, both libraries (shared and static), the command,
# pkg-config files and a CMake package (find_package(xstage) gives
# xstage::xstage and xstage::measure, and the static ones as
# xstage::xstage_static and xstage::measure_static). docs/api.md "Using
# the library".
include(CMakePackageConfigHelpers)

set_target_properties(xstage_shared PROPERTIES EXPORT_NAME xstage)
set_target_properties(xstage_static PROPERTIES EXPORT_NAME xstage_static)
# the measure library finds libxstage beside it, wherever the prefix is
set_target_properties(xstage_measure_shared PROPERTIES EXPORT_NAME measure INSTALL_RPATH "$ORIGIN")
set_target_properties(xstage_measure_static PROPERTIES EXPORT_NAME measure_static)

install(TARGETS xstage xstage-bench RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# the data the command and the Python package read, under
# DATADIR/xstage (share/xstage): the published timings that validate
# predicts (published/), the example programs (examples/) and the built-in
# profiles as JSON to start from (profiles/). The command finds them
# beside itself (cli_data_file), wherever the prefix is.
install(DIRECTORY ${PROJECT_SOURCE_DIR}/data/published DESTINATION ${XSTAGE_DATA_INSTALL_DIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/examples ${PROJECT_SOURCE_DIR}/profiles
        DESTINATION ${XSTAGE_DATA_INSTALL_DIR})
install(TARGETS xstage_shared xstage_static xstage_measure_shared xstage_measure_static
  EXPORT xstageTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES ${PROJECT_SOURCE_DIR}/include/xstage.h ${PROJECT_SOURCE_DIR}/include/xstage_measure.h
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT xstageTargets NAMESPACE xstage::
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/xstage)

set(XSTAGE_CONFIG_MPI ${XSTAGE_HAVE_MPI})
set(XSTAGE_CONFIG_CUDA ${XSTAGE_HAVE_CUDA})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/xstageConfig.cmake.in
  ${PROJECT_BINARY_DIR}/xstageConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/xstage)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/xstageConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/xstageConfig.cmake ${PROJECT_BINARY_DIR}/xstageConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/xstage)

# pkg-config: Libs.private and Requires.private serve `pkg-config --static`
set(XSTAGE_PC_MEASURE_PRIVATE "-lpthread")
if(XSTAGE_HAVE_MPI)
  string(APPEND XSTAGE_PC_MEASURE_PRIVATE " ${MPI_C_LINK_FLAGS}")
  foreach(lib ${MPI_C_LIBRARIES})
    string(APPEND XSTAGE_PC_MEASURE_PRIVATE " ${lib}")
  endforeach()
endif()
if(XSTAGE_HAVE_CUDA)
  string(APPEND XSTAGE_PC_MEASURE_PRIVATE " -L${CUDAToolkit_LIBRARY_DIR} -lcudart -lstdc++")
endif()
# relocatable: the prefix is found from where the .pc file lies, so that
# `cmake --install --prefix DIR` and a moved tree both work
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  set(XSTAGE_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
else()
  file(RELATIVE_PATH XSTAGE_PC_UP "/x/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/x")
  string(REGEX REPLACE "/$" "" XSTAGE_PC_UP "${XSTAGE_PC_UP}")
  set(XSTAGE_PC_PREFIX "\${pcfiledir}/${XSTAGE_PC_UP}")
endif()
# whether Libs needs an rpath is known only at install time, where the
# prefix is final (cmake/install_pc.cmake): the rpath stays a placeholder
set(XSTAGE_PC_RPATH "@XSTAGE_PC_RPATH@")
configure_file(${PROJECT_SOURCE_DIR}/cmake/xstage.pc.in ${PROJECT_BINARY_DIR}/pc-staged/xstage.pc @ONLY)
configure_file(${PROJECT_SOURCE_DIR}/cmake/xstage-measure.pc.in
               ${PROJECT_BINARY_DIR}/pc-staged/xstage-measure.pc @ONLY)
install(CODE "
  set(PC_STAGED \"${PROJECT_BINARY_DIR}/pc-staged/xstage.pc;${PROJECT_BINARY_DIR}/pc-staged/xstage-measure.pc\")
  set(PC_OUT \"${PROJECT_BINARY_DIR}/pc-installed\")
  set(PC_LIBDIR \"${CMAKE_INSTALL_LIBDIR}\")
  set(PC_ARCH \"${CMAKE_LIBRARY_ARCHITECTURE}\")
  include(\"${PROJECT_SOURCE_DIR}/cmake/install_pc.cmake\")")
install(FILES ${PROJECT_BINARY_DIR}/pc-installed/xstage.pc
              ${PROJECT_BINARY_DIR}/pc-installed/xstage-measure.pc
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# the Python binding (python/xstage, ctypes over libxstage), where Debian's
# python3 looks: PREFIX/lib/python3/dist-packages under /usr, and
# PREFIX/lib/python3.MINOR/dist-packages elsewhere (/usr/local); the
# package finds the library in PREFIX's library folders
set(XSTAGE_PYTHON_DEFAULT lib/python3/dist-packages)
if(NOT CMAKE_INSTALL_PREFIX STREQUAL "/usr")
  find_program(XSTAGE_SYSTEM_PYTHON NAMES python3 PATHS /usr/bin NO_DEFAULT_PATH)
  if(XSTAGE_SYSTEM_PYTHON)
    execute_process(COMMAND ${XSTAGE_SYSTEM_PYTHON} -c
                    "import sys; print('%d.%d' % sys.version_info[:2])"
                    OUTPUT_VARIABLE XSTAGE_PY_VER OUTPUT_STRIP_TRAILING_WHITESPACE)
    if(XSTAGE_PY_VER)
      set(XSTAGE_PYTHON_DEFAULT lib/python${XSTAGE_PY_VER}/dist-packages)
    endif()
  endif()
endif()
set(XSTAGE_PYTHON_DIR ${XSTAGE_PYTHON_DEFAULT} CACHE STRING
    "Where cmake --install puts the Python package, relative to the prefix")
install(DIRECTORY ${PROJECT_SOURCE_DIR}/python/xstage DESTINATION ${XSTAGE_PYTHON_DIR}
        PATTERN "__pycache__" EXCLUDE)
