// The job's log directory, LOG_DIR/JOB: the job id given by --job-id, or the first of 1, 2,
// 3, ... not yet used under LOG_DIR — so the first job writes log_output/1/rank.R/stdout,
// the layout of the seeds, and a second one does not overwrite it.
//
// Threading: pure functions over the file system.
#pragma once

#include <string>

namespace sf::sfrun {

// The id and creates LOG_DIR/ID (and LOG_DIR), claiming a fresh numbered id atomically when
// `requested` is empty. sf::IoError if the directory cannot be made.
std::string claim_job_dir(const std::string& log_dir, const std::string& requested);

// The id claim_job_dir would pick now, creating nothing (--dry-run).
std::string peek_job_id(const std::string& log_dir, const std::string& requested);

}  // namespace sf::sfrun
