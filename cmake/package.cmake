# What `cmake --install` and the Debian packages hold, in two components:
#   daemon  the amfgate daemon and amfcall in /usr/bin, the default settings as a conffile in
#           /etc/amfgate, the systemd unit (package amfgate; `apt install ./amfgate_*.deb`
#           pulls the shared libraries it links)
#   dev     headers, static libraries and the CMake package config that a daemon of one's
#           own builds against: find_package(amfgate CONFIG REQUIRED) (package amfgate-dev)
# Both are versioned by project(VERSION) in the top CMakeLists.txt.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(TARGETS amfgate amfcall RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT daemon)
install(FILES config/amfgate.json DESTINATION /etc/amfgate COMPONENT daemon)
install(FILES config/amfgate.service DESTINATION /lib/systemd/system COMPONENT daemon)
install(FILES README.md LICENSE DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT daemon)

set_target_properties(amf_codec PROPERTIES EXPORT_NAME codec)
set_target_properties(amf_json PROPERTIES EXPORT_NAME json)
set_target_properties(amfgate_config PROPERTIES EXPORT_NAME config)
set_target_properties(amfgate_services PROPERTIES EXPORT_NAME services)
set_target_properties(amfgate_messaging PROPERTIES EXPORT_NAME messaging)
set_target_properties(amfgate_bridge PROPERTIES EXPORT_NAME bridge)
set_target_properties(amfgate_redis PROPERTIES EXPORT_NAME redis)
set_target_properties(amfgate_server PROPERTIES EXPORT_NAME server)
set_target_properties(amfgate_client PROPERTIES EXPORT_NAME client)
set_target_properties(amfgate_daemon PROPERTIES EXPORT_NAME amfgate)
# Two export sets, so that the codec is usable without the daemon's dependencies.
install(TARGETS amf_codec amf_json
        EXPORT amfgateCodecTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS amfgate_config amfgate_services amfgate_messaging amfgate_bridge amfgate_redis
                amfgate_server amfgate_client amfgate_daemon
        EXPORT amfgateTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
foreach(dir codec/include config/include services/include messaging/include bridge/include
            server/include)
  install(DIRECTORY ${dir}/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT dev)
endforeach()
set(config_dir ${CMAKE_INSTALL_LIBDIR}/cmake/amfgate)
install(EXPORT amfgateCodecTargets NAMESPACE amfgate:: DESTINATION ${config_dir} COMPONENT dev)
install(EXPORT amfgateTargets NAMESPACE amfgate:: DESTINATION ${config_dir} COMPONENT dev)
configure_package_config_file(cmake/amfgateConfig.cmake.in amfgateConfig.cmake
                              INSTALL_DESTINATION ${config_dir})
# 0.x releases may change the API at every minor version.
write_basic_package_version_file(amfgateConfigVersion.cmake COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/amfgateConfig.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/amfgateConfigVersion.cmake
        DESTINATION ${config_dir} COMPONENT dev)

set(CPACK_PACKAGE_NAME amfgate)
set(CPACK_PACKAGE_VENDOR "amfgate")
set(CPACK_PACKAGE_CONTACT "amfgate maintainers <amfgate@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "AMF remoting gateway for Flash, Flex, AIR, Apache Royale and Ruffle clients")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL daemon dev)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)

set(CPACK_DEBIAN_DAEMON_PACKAGE_NAME amfgate)
set(CPACK_DEBIAN_DAEMON_PACKAGE_SECTION net)
set(CPACK_DEBIAN_DAEMON_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_DAEMON_PACKAGE_DEPENDS "passwd")
set(CPACK_DEBIAN_DAEMON_PACKAGE_CONTROL_EXTRA
    "${CMAKE_SOURCE_DIR}/config/debian/conffiles;${CMAKE_SOURCE_DIR}/config/debian/postinst;${CMAKE_SOURCE_DIR}/config/debian/prerm;${CMAKE_SOURCE_DIR}/config/debian/postrm")
set(CPACK_COMPONENT_DAEMON_DESCRIPTION
    "AMF remoting gateway for Flash, Flex, AIR, Apache Royale and Ruffle clients")

# The -dev packages of what the package config finds, and of the libraries that the static
# libraries link (libcrypt for password hashes, libcrypto for credential digests, libssl for the
# bridge's https upstreams).
set(CPACK_DEBIAN_DEV_PACKAGE_NAME amfgate-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS
    "libboost1.81-dev, libspdlog-dev, nlohmann-json3-dev, libhiredis-dev, libcrypt-dev, libssl-dev, pkg-config")
set(CPACK_DEBIAN_DEV_PACKAGE_RECOMMENDS "amfgate (= ${PROJECT_VERSION}), cmake (>= 3.25), g++ (>= 4:12)")
set(CPACK_COMPONENT_DEV_DESCRIPTION
    "amfgate headers, static libraries and CMake package: build a daemon of your own services")
# python3-amfgate: the Python module (AMFGATE_PYTHON), built for Debian's python3 3.11.
if(AMFGATE_PYTHON)
  list(APPEND CPACK_COMPONENTS_ALL python)
  set(CPACK_DEBIAN_PYTHON_PACKAGE_NAME python3-amfgate)
  set(CPACK_DEBIAN_PYTHON_PACKAGE_SECTION python)
  set(CPACK_DEBIAN_PYTHON_PACKAGE_SHLIBDEPS ON)
  set(CPACK_DEBIAN_PYTHON_PACKAGE_DEPENDS "python3 (>= 3.11~), python3 (<< 3.12)")
  set(CPACK_DEBIAN_PYTHON_PACKAGE_SUGGESTS "python3-defusedxml")
  set(CPACK_COMPONENT_PYTHON_DESCRIPTION
      "amfgate's AMF0/AMF3 codec for Python: loads/dumps, remoting packets, Py3AMF drop-in")
endif()
include(CPack)
