// The archive reader under fuzzing: an input is turned into an archive file (raw bytes, or a
// valid archive with the input's byte edits, optionally with its checksums recomputed so that the
// edits reach the checks behind them), which ms_create maps with archive_policy=auto. Whatever the
// file holds, ms_create must return a metaspace, ms_verify must pass, and a refused file must
// leave nothing mapped; a crash or sanitizer report is a bug.
#pragma once

#include <cstddef>
#include <cstdint>

namespace metaspace::fuzz {

struct ArchiveRunStats {
  bool mapped = false;
  int refusal = 0;  // ms_error_t of the refusal, 0 if mapped
};

ArchiveRunStats run_archive_input(const uint8_t* data, size_t size);

}  // namespace metaspace::fuzz
