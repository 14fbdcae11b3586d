// Python string algorithms and argument helpers shared by the filters (jinja_filters.cpp) and
// the str/dict/list methods (jinja_methods.cpp).
#pragma once
#include "text/jinja.h"

namespace nvfp4::jinja {

Value arg(const CallArgs& a, size_t idx, const std::string& name, const Value& dflt);
const std::string& need_str(const Value& v, const std::string& what, int line);
int64_t need_int(const Value& v, const std::string& what, int line);
std::string ascii_case(const std::string& s, int line, int mode);  // 0 lower, 1 upper; refuses non-ASCII
std::string py_title(const std::string& s, int line);              // str.title()
std::string jinja_title(const std::string& s, int line);           // the title filter
std::string py_capitalize(const std::string& s, int line);
// str.strip/lstrip/rstrip(chars): which = 1 left, 2 right, 3 both.
std::string py_strip(const std::string& s, const Value& chars, int which, int line);
std::string py_replace(Evaluator& ev, const std::string& s, const std::string& a, const std::string& b, int64_t count,
                       int line);
Value py_split(Evaluator& ev, const std::string& s, const Value& sep, int64_t maxsplit, int line);
bool starts_or_ends(const std::string& s, const Value& x, bool start, int line);
std::vector<std::string> splitlines(const std::string& s);
int64_t length_of(const Value& v, int line);
Value attr_path(Evaluator& ev, const Value& item, const std::string& path, int line);
CallArgs rest_args(const CallArgs& a, size_t from);

}  // namespace nvfp4::jinja
