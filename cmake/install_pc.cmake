# install_pc.cmake: run by `cmake --install`, with the prefix the install
# really goes to. It writes the pkg-config files from their configured
# copies (PC_STAGED) into PC_OUT, with what a consumer needs to run
# against the library and nothing more:
#  - the library folder is one the loader searches by itself (/usr/lib,
#    /usr/lib/<multiarch>, ...): nothing to add;
#  - it is listed in /etc/ld.so.conf (/usr/local/lib on Debian): nothing to
#    add, and ldconfig is run (when installing as root, without DESTDIR) so
#    that the loader's cache holds the new library;
#  - anywhere else ($HOME/.local, /opt/xstage, a temporary prefix):
#    `pkg-config --libs` adds -Wl,-rpath,${libdir}, so that a consumer
#    built with it runs without LD_LIBRARY_PATH.
# Variables: PC_STAGED (the configured .pc files, @XSTAGE_PC_RPATH@ left
# in them), PC_OUT (a folder), PC_LIBDIR (CMAKE_INSTALL_LIBDIR), PC_ARCH
# (CMAKE_LIBRARY_ARCHITECTURE, may be empty).
if(IS_ABSOLUTE "${PC_LIBDIR}")
  set(libdir "${PC_LIBDIR}")
else()
  set(libdir "${CMAKE_INSTALL_PREFIX}/${PC_LIBDIR}")
endif()
get_filename_component(libdir "${libdir}" ABSOLUTE)
set(trusted /lib /usr/lib /lib64 /usr/lib64)
if(PC_ARCH)
  list(APPEND trusted /lib/${PC_ARCH} /usr/lib/${PC_ARCH})
endif()
set(configured "")
file(GLOB confs /etc/ld.so.conf /etc/ld.so.conf.d/*.conf)
foreach(conf ${confs})
  file(STRINGS "${conf}" lines REGEX "^/")
  foreach(line ${lines})
    string(STRIP "${line}" line)
    list(APPEND configured "${line}")
  endforeach()
endforeach()
set(XSTAGE_PC_RPATH "")
list(FIND trusted "${libdir}" in_trusted)
list(FIND configured "${libdir}" in_configured)
if(in_trusted GREATER -1)
  message(STATUS "xstage: ${libdir} is searched by the loader")
elseif(in_configured GREATER -1)
  if("$ENV{DESTDIR}" STREQUAL "" AND EXISTS /sbin/ldconfig)
    execute_process(COMMAND /sbin/ldconfig RESULT_VARIABLE rc ERROR_QUIET)
    if(rc EQUAL 0)
      message(STATUS "xstage: ${libdir} is in /etc/ld.so.conf; ran ldconfig")
    else()
      message(STATUS "xstage: ${libdir} is in /etc/ld.so.conf: run ldconfig as root "
                     "so that the loader finds libxstage there")
    endif()
  endif()
else()
  set(XSTAGE_PC_RPATH " -Wl,-rpath,\${libdir}")
  message(STATUS "xstage: ${libdir} is not searched by the loader: pkg-config --libs "
                 "adds -Wl,-rpath,${libdir}")
endif()
foreach(pc ${PC_STAGED})
  get_filename_component(name "${pc}" NAME)
  configure_file("${pc}" "${PC_OUT}/${name}" @ONLY)
endforeach()
