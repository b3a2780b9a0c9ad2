// SPDX-License-Identifier: MIT
// t_demangle: C++ allocations whose stacks ndmemreport must show demangled: a method of a class
// in a namespace (ns::Foo::bar(int)), std::vector's growth (push_back), and a free function with
// internal linkage (grow()). Everything is left live at exit. Built -O0 -g so each call keeps
// its frame and line; t_demangle.sh finds the lines by the markers at their ends.
#include <vector>

namespace ns {
struct Foo {
  char *bar(int n);
};

char *Foo::bar(int n) {
  return new char[n]; // BAR
}
} // namespace ns

static std::vector<int> *grow() {
  auto *v = new std::vector<int>;                 // NEWVEC
  for (int i = 0; i < 5000; i++) v->push_back(i); // GROW
  return v;
}

int main() {
  ns::Foo f;
  char *p = f.bar(100000);      // MAIN_BAR
  std::vector<int> *v = grow(); // MAIN_GROW
  return p == nullptr || v == nullptr;
}
