// The text of an input file as the readers parse it: plain, or gzip-compressed (evidence kept as
// .json.gz), told apart by gzip's magic bytes rather than by the name, so that a renamed or piped
// file reads the same.
#pragma once

#include <string>
#include <string_view>

namespace dlb::report {

// Whether `data` starts with gzip's magic bytes (1f 8b).
bool IsGzip(std::string_view data);

// Inflates a gzip file's bytes, members written one after another (`cat a.gz b.gz`) included.
// Throws InputError(path, ...) on a corrupt or truncated stream or bytes after its end, so that
// nothing is read from a damaged file.
std::string Gunzip(std::string_view data, const std::string& path);

// The whole text of `path` ("-" is stdin), inflated where it is gzip. Throws InputError naming
// the file: it cannot be opened or read, or its gzip stream is damaged.
std::string ReadFileText(const std::string& path);

// A name the readers take from a folder: *.json or *.json.gz.
bool IsJsonFileName(std::string_view name);

}  // namespace dlb::report
