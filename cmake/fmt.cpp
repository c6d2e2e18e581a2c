// fmt's formatting core, compiled once for the whole build. Every other translation unit includes
// fmt's headers without FMT_HEADER_ONLY, so they declare this code instead of compiling it again
// (about a second of -O3 each). Debian's libfmt-dev ships fmt only as a shared library, which the
// portable binary avoids, hence this one file.
#include <fmt/format-inl.h>

FMT_BEGIN_NAMESPACE
namespace detail {
// The instantiations fmt/format.h declares extern when FMT_HEADER_ONLY is not defined.
template auto thousands_sep_impl<char>(locale_ref) -> thousands_sep_result<char>;
template auto thousands_sep_impl<wchar_t>(locale_ref) -> thousands_sep_result<wchar_t>;
template auto decimal_point_impl(locale_ref) -> char;
template auto decimal_point_impl(locale_ref) -> wchar_t;
}  // namespace detail
FMT_END_NAMESPACE
