# baton_prefer_static_archives(): points every imported shared library of
# this directory (gRPC, Abseil, re2, c-ares, zlib, yaml-cpp, ...) at the static
# archive Debian installs beside it, and makes fmt header-only (Debian ships no
# archive of it; spdlog, which has none either, is compiled into baton_spdlog
# in sidecar/common). The packages whose Find modules know a
# *_USE_STATIC_LIBS switch (Protobuf, OpenSSL, Boost) are switched before
# find_package; this handles the CONFIG packages, which name their .so files.
#
# Every target then links the archives (and gRPC's unsecure variants, below);
# only bin/baton and api_bench_server add -static (BATON_STATIC_LINK_OPTIONS),
# so the tests stay ordinary executables on the shared glibc.
function(baton_prefer_static_archives)
  get_directory_property(imported IMPORTED_TARGETS)
  foreach(target IN LISTS imported)
    get_target_property(type ${target} TYPE)
    if(NOT type STREQUAL "SHARED_LIBRARY" AND NOT type STREQUAL "UNKNOWN_LIBRARY"
       OR target STREQUAL "spdlog::spdlog" OR target STREQUAL "fmt::fmt")
      continue()
    endif()
    get_target_property(configs ${target} IMPORTED_CONFIGURATIONS)
    foreach(config IN LISTS configs ITEMS "")
      set(property IMPORTED_LOCATION)
      if(config)
        string(TOUPPER "_${config}" suffix)
        string(APPEND property ${suffix})
      endif()
      get_target_property(location ${target} ${property})
      if(NOT location MATCHES "^(.*)\\.so(\\.[0-9.]+)?$")
        continue()
      endif()
      set(archive "${CMAKE_MATCH_1}.a")
      if(NOT EXISTS "${archive}")
        message(FATAL_ERROR "BATON_STATIC: ${target} has no static archive ${archive}")
      endif()
      set_target_properties(${target} PROPERTIES ${property} "${archive}")
    endforeach()
  endforeach()
  # gRPC without its security stack (TLS and ALTS credentials, xDS, Google and
  # AWS credentials): baton serves gRPC only on loopback with insecure
  # credentials and reaches the API server through its own HTTPS client, so
  # gRPC::grpc and gRPC::grpc++ are linked as their _unsecure variants, which
  # leaves 2.4 MB less code to page in (docs/release.md).
  foreach(lib IN ITEMS grpc grpc++)
    get_target_property(configs gRPC::${lib}_unsecure IMPORTED_CONFIGURATIONS)
    set(properties INTERFACE_LINK_LIBRARIES)
    foreach(config IN LISTS configs)
      string(TOUPPER "${config}" config)
      list(APPEND properties IMPORTED_LOCATION_${config})
    endforeach()
    foreach(property IN LISTS properties)
      get_target_property(value gRPC::${lib}_unsecure ${property})
      set_target_properties(gRPC::${lib} PROPERTIES ${property} "${value}")
    endforeach()
  endforeach()
endfunction()
