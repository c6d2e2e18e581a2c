// Reading files a user names (configs, reports) without trusting them: only a regular file is
// opened for reading (a FIFO with no writer, /dev/zero or a directory is refused at once, before a
// byte is read), and no more than a stated number of bytes is ever read. Errors are input_error
// (exit 3) naming the file.
#pragma once

#include <cstddef>
#include <streambuf>
#include <string>

namespace gdn {

// Opens `path` for reading and returns the descriptor; refuses anything but a regular file and a
// file larger than `max_bytes`. `what` names the file's role in messages ("config", "report").
int open_regular_file(const std::string& path, const std::string& what, std::size_t max_bytes);

// At most max_bytes + 1 bytes of the file: one byte past the limit is enough for the caller to
// know it is crossed, even when the file grows after it was opened.
std::string read_bounded_file(const std::string& path, const std::string& what, std::size_t max_bytes);

// The same file as a stream read in chunks, so a parser refuses a bad byte without the whole file
// in memory. Reading stops at max_bytes; over_limit() then says the file was longer. With
// refuse_larger, a file whose size is already past max_bytes is refused when opened.
class BoundedFileBuf : public std::streambuf {
 public:
  BoundedFileBuf(const std::string& path, const std::string& what, std::size_t max_bytes, bool refuse_larger = true);
  ~BoundedFileBuf() override;
  BoundedFileBuf(const BoundedFileBuf&) = delete;
  BoundedFileBuf& operator=(const BoundedFileBuf&) = delete;
  bool over_limit() const { return over_; }

 protected:
  int_type underflow() override;

 private:
  std::string path_;
  int fd_ = -1;
  std::size_t left_;
  bool over_ = false;
  char buf_[64 * 1024];
};

// What kind of file the mode bits say ("a directory", "a FIFO", ...), for messages.
const char* file_kind(unsigned mode);

}  // namespace gdn
