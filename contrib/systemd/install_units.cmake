# Installs the systemd units of contrib/systemd (run by `cmake --install`,
# after CMakeLists.txt set STRIA_SOURCE_DIR, STRIA_BINARY_DIR, STRIA_BINDIR).
# They go to /lib/systemd/system for a /usr install, where Debian 12's
# packages put theirs, else under the prefix (systemd also reads
# /usr/local/lib/systemd/system). ExecStart names /usr/bin in the sources;
# here it becomes the bin directory of the actual prefix.
set(units stria-mgmtd.service stria-metad.service stria-stord.service stria-fuse@.service)
if(CMAKE_INSTALL_PREFIX STREQUAL "/usr")
  set(unitdir /lib/systemd/system)
else()
  set(unitdir "${CMAKE_INSTALL_PREFIX}/lib/systemd/system")
endif()
set(staged "${STRIA_BINARY_DIR}/systemd-units")
file(MAKE_DIRECTORY "${staged}")
foreach(u ${units})
  file(READ "${STRIA_SOURCE_DIR}/contrib/systemd/${u}" text)
  string(REPLACE "/usr/bin/" "${CMAKE_INSTALL_PREFIX}/${STRIA_BINDIR}/" text "${text}")
  file(WRITE "${staged}/${u}" "${text}")
  file(INSTALL "${staged}/${u}" DESTINATION "${unitdir}"
       PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)
endforeach()
