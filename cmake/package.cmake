# Installed files beyond the library's (man pages, the systemd unit, the
# examples) and the .deb: `cpack -G DEB` in a build tree. The .deb installs
# under /usr whatever the build's CMAKE_INSTALL_PREFIX (ZF_DEB_PREFIX); the
# unit, the node folder and the Python packages follow that prefix.

# man pages, gzipped as Debian wants them
set(zf_man_pages zfctl.1 zfd.8)
set(zf_man_gz)
foreach(page ${zf_man_pages})
  string(REGEX REPLACE ".*\\.([0-9])$" "\\1" section ${page})
  set(gz ${PROJECT_BINARY_DIR}/man/${page}.gz)
  add_custom_command(OUTPUT ${gz}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${PROJECT_BINARY_DIR}/man
    COMMAND gzip -9nc ${PROJECT_SOURCE_DIR}/contrib/man/${page} > ${gz}
    DEPENDS ${PROJECT_SOURCE_DIR}/contrib/man/${page} VERBATIM)
  list(APPEND zf_man_gz ${gz})
  install(FILES ${gz} DESTINATION ${CMAKE_INSTALL_MANDIR}/man${section})
endforeach()
add_custom_target(zf_man ALL DEPENDS ${zf_man_gz})

# The systemd unit: contrib/zfd.service with its /usr/local paths made the
# install prefix's, written at install time (CPack installs with its own
# prefix). The node folder it names is created empty. When the seed pipeline
# is installed (below), the unit's zfd also loads code from its two folders,
# so the installed example deploys to the installed daemon as it runs with
# zfctl run (root-owned package files, like the node folder).
install(DIRECTORY DESTINATION ${CMAKE_INSTALL_LIBDIR}/zflow/nodes)
set(zf_unit_examples "")
if(ZF_BUILD_EXAMPLES AND TARGET zf_camera)
  set(zf_unit_examples
      " --lib-path \${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}/zflow/examples --lib-path \${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_DATADIR}/zflow/examples")
endif()
install(CODE "
  file(READ \"${PROJECT_SOURCE_DIR}/contrib/zfd.service\" unit)
  string(REPLACE \"/usr/local/bin/\" \"\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_BINDIR}/\" unit \"\${unit}\")
  string(REPLACE \"/usr/local/lib/zflow/nodes\" \"\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}/zflow/nodes${zf_unit_examples}\" unit \"\${unit}\")
  string(REPLACE \"install -m644 contrib/zfd.service /etc/systemd/system/ && \" \"\" unit \"\${unit}\")
  set(dest \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/lib/systemd/system\")
  file(MAKE_DIRECTORY \"\${dest}\")
  file(WRITE \"\${dest}/zfd.service\" \"\${unit}\")
  message(STATUS \"Installing: \${dest}/zfd.service\")
")
install(FILES ${PROJECT_SOURCE_DIR}/contrib/zfd.yaml DESTINATION ${CMAKE_INSTALL_DATADIR}/zflow)

# The seed pipeline: node libraries under <libdir>/zflow/examples, the
# descriptors and Python nodes under <datadir>/zflow/examples
# (zfctl run .../flow.yaml --var LIB_DIR=<libdir>/zflow/examples/seed-pipeline).
if(ZF_BUILD_EXAMPLES AND TARGET zf_camera)
  install(TARGETS zf_camera zf_detect zf_motor zf_recorder
          LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}/zflow/examples/seed-pipeline)
  if(TARGET zf_detect_cpp)
    install(TARGETS zf_detect_cpp
            LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}/zflow/examples/seed-pipeline)
  endif()
  install(FILES examples/seed-pipeline/flow.yaml examples/seed-pipeline/flow-python.yaml
                examples/seed-pipeline/flow-cpp.yaml examples/seed-pipeline/detect.py
                examples/seed-pipeline/test_detect.py
          DESTINATION ${CMAKE_INSTALL_DATADIR}/zflow/examples/seed-pipeline)
endif()

set(CPACK_PACKAGE_NAME zflow)
set(CPACK_PACKAGE_VENDOR zflow)
set(CPACK_PACKAGE_CONTACT "zflow developers <zflow@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "zero-copy dataflow runtime (Zenoh-Flow family): library, zfctl, zfd, Python host")
set(CPACK_PACKAGE_DESCRIPTION
    "zflow moves data between the nodes of a dataflow by handing over reference-counted
pointers into a shared-memory pool. This package has the library (C, C++ header), its
pkg-config file and CMake package, zfctl and zfd (with a systemd unit and man pages), the
Python node host and the zflow / zenoh_flow Python packages, and the seed pipeline example.")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_GENERATOR DEB)
set(ZF_DEB_PREFIX /usr CACHE PATH "Where the .deb (cpack -G DEB) installs zflow")
set(CPACK_PACKAGING_INSTALL_PREFIX ${ZF_DEB_PREFIX})
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON) # libyaml, libpython3.x, libc from the binaries
set(CPACK_DEBIAN_PACKAGE_DEPENDS "python3, passwd, libddsc0debian, libsodium23")
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "python3-numpy, graphviz")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    ${PROJECT_SOURCE_DIR}/contrib/debian/postinst ${PROJECT_SOURCE_DIR}/contrib/debian/postrm)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
# The .deb is zflow's own: a project that includes zflow with
# add_subdirectory() packages itself.
if(ZF_TOP_LEVEL)
  include(CPack)
endif()
