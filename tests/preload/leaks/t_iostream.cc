// SPDX-License-Identifier: MIT
// t_iostream: a healthy C++ program that uses iostream and strings: what it leaves live at exit
// is the C++ runtime's (libstdc++'s emergency exception pool, stdio's buffers), so the corpus
// (t_corpus.py) wants --fail-on-leak to exit 0, by default and under --exact.
#include <iostream>
#include <string>
#include <vector>
int main() {
  std::vector<std::string> v;
  for (int i = 0; i < 100; i++) v.push_back(std::to_string(i) + " a string long enough to allocate");
  std::cout << "lines " << v.size() << std::endl;
  std::cerr << "done" << std::endl;
  return 0;
}
