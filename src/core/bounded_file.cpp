#include "core/bounded_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fmt/format.h>

#include "core/errors.h"

namespace gdn {

const char* file_kind(unsigned mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISLNK(mode)) return "a symbolic link";
  if (S_ISREG(mode)) return "a regular file";
  return "not a regular file";
}

int open_regular_file(const std::string& path, const std::string& what, std::size_t max_bytes) {
  // O_NONBLOCK: opening a FIFO with no writer returns at once instead of waiting for one.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) throw input_error(fmt::format("cannot read {} '{}': {}", what, path, std::strerror(errno)));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    throw input_error(fmt::format("cannot read {} '{}': {}", what, path, std::strerror(err)));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    throw input_error(fmt::format("cannot read {} '{}': it is {}, not a regular file", what, path, file_kind(st.st_mode)));
  }
  if (std::size_t(st.st_size) > max_bytes) {
    ::close(fd);
    throw input_error(fmt::format("{} '{}' is {} bytes, more than the {} MiB limit", what, path, st.st_size,
                                  max_bytes >> 20));
  }
  // Reads of a regular file never block; the flag is cleared anyway so a read is a plain read.
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return fd;
}

std::string read_bounded_file(const std::string& path, const std::string& what, std::size_t max_bytes) {
  BoundedFileBuf in(path, what, max_bytes, /*refuse_larger=*/false);
  std::string text;
  char chunk[64 * 1024];
  for (std::streamsize n; (n = in.sgetn(chunk, sizeof chunk)) > 0;) text.append(chunk, std::size_t(n));
  if (in.over_limit()) text.push_back('\0');  // max_bytes + 1: the caller sees the limit crossed
  return text;
}

BoundedFileBuf::BoundedFileBuf(const std::string& path, const std::string& what, std::size_t max_bytes,
                               bool refuse_larger)
    : path_(path), fd_(open_regular_file(path, what, refuse_larger ? max_bytes : SIZE_MAX)), left_(max_bytes) {}

BoundedFileBuf::~BoundedFileBuf() {
  if (fd_ >= 0) ::close(fd_);
}

BoundedFileBuf::int_type BoundedFileBuf::underflow() {
  if (gptr() < egptr()) return traits_type::to_int_type(*gptr());
  if (left_ == 0) {
    // At the limit: one more byte tells a file that ends here from one that goes on.
    char probe;
    ssize_t n;
    do n = ::read(fd_, &probe, 1);
    while (n < 0 && errno == EINTR);
    over_ = n > 0;
    return traits_type::eof();
  }
  ssize_t n;
  do n = ::read(fd_, buf_, std::min(sizeof buf_, left_));
  while (n < 0 && errno == EINTR);
  if (n < 0) throw input_error(fmt::format("cannot read '{}': {}", path_, std::strerror(errno)));
  if (n == 0) return traits_type::eof();
  left_ -= std::size_t(n);
  setg(buf_, buf_, buf_ + n);
  return traits_type::to_int_type(*gptr());
}

}  // namespace gdn
