// Subcommand entry points. Each returns the process exit code: 0 success, 1 a check
// failed (#wrong > 0); errors are thrown (see main.cc for their exit codes).
#pragma once

#include "bench/options.h"
#include "lib/bandwidth.h"
#include "lib/bootstrap.h"

namespace railbench {

int run_sendrecv(Bootstrap& bootstrap, const CommonOptions& common, const SendRecvOptions& options);
int run_collective(Bootstrap& bootstrap, const CommonOptions& common, const CollectiveOptions& options,
                   Pattern pattern);
int run_kvcache(Bootstrap& bootstrap, const CommonOptions& common, const KvCacheOptions& options);
int run_info();
int run_validate(Bootstrap& bootstrap, CommonOptions common, const ValidateOptions& options);
int run_validate_plan(const ValidateOptions& options);  // no ranks needed

}  // namespace railbench
