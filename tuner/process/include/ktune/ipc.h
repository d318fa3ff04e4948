// Framed messages between the tuner and its GPU worker process over pipes: a JSON header and
// an optional binary blob (a CUBIN). Frame: u32 header length, header, u64 blob length, blob.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace ktune::ipc {

struct Message {
  nlohmann::json header;
  std::string blob;
};

// Returns false when the other end is gone.
bool write_message(int fd, const Message& message);

enum class ReadStatus { kOk, kClosed, kTimeout };
// Waits up to timeout_seconds (< 0: forever). While waiting, drains `side_fd` (the worker's
// stderr, -1 for none) into side_text, keeping its last 8 KiB.
ReadStatus read_message(int fd, Message& out, double timeout_seconds, int side_fd = -1,
                        std::string* side_text = nullptr);
// Waits up to timeout_seconds for `fd` to have something to read (or to be closed): kOk then,
// kTimeout otherwise; drains `side_fd` meanwhile as read_message does. Reads nothing from `fd`.
ReadStatus wait_readable(int fd, double timeout_seconds, int side_fd = -1,
                         std::string* side_text = nullptr);

}  // namespace ktune::ipc
