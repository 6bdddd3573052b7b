// spdlog's implementation, compiled once, for the static build.
//
// Debian ships spdlog as a shared library and as headers, but no archive. A
// static bin/baton could use it header-only, but then every file that logs
// (they all include log.h) compiles spdlog's whole implementation again:
// about ten times the time of the file's own code. Instead the static build
// defines SPDLOG_COMPILED_LIB everywhere, so spdlog's headers only declare,
// and this file is where its out-of-line code is compiled: every "-inl.h"
// (the definitions in header-only mode) of the parts baton uses, and the
// templates baton instantiates: the sink base over both mutex kinds (its
// stderr sink, the tests' ostream sinks) and the stderr logger factory.
// fmt stays header-only (no archive of it either): that costs each file far
// less.
#ifndef SPDLOG_COMPILED_LIB
#error "spdlog_lib.cc is built with SPDLOG_COMPILED_LIB defined"
#endif

#include <mutex>

#include "spdlog/common-inl.h"
#include "spdlog/details/backtracer-inl.h"
#include "spdlog/details/log_msg-inl.h"
#include "spdlog/details/log_msg_buffer-inl.h"
#include "spdlog/details/null_mutex.h"
#include "spdlog/details/os-inl.h"
#include "spdlog/details/periodic_worker-inl.h"
#include "spdlog/details/registry-inl.h"
#include "spdlog/logger-inl.h"
#include "spdlog/pattern_formatter-inl.h"
#include "spdlog/sinks/ansicolor_sink-inl.h"
#include "spdlog/sinks/base_sink-inl.h"
#include "spdlog/sinks/sink-inl.h"
#include "spdlog/sinks/stdout_sinks-inl.h"
#include "spdlog/spdlog-inl.h"

template class spdlog::sinks::base_sink<std::mutex>;
template class spdlog::sinks::base_sink<spdlog::details::null_mutex>;

// The registry's default logger writes to stdout in colour.
template class spdlog::sinks::ansicolor_sink<spdlog::details::console_mutex>;
template class spdlog::sinks::ansicolor_stdout_sink<spdlog::details::console_mutex>;

template class spdlog::sinks::stdout_sink_base<spdlog::details::console_mutex>;
template class spdlog::sinks::stderr_sink<spdlog::details::console_mutex>;
template std::shared_ptr<spdlog::logger> spdlog::stderr_logger_mt<spdlog::synchronous_factory>(
    const std::string& logger_name);
