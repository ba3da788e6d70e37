// docs/layouts.md's Layout call: a (2,2,2) device matrix and a 2-D tensor's layout on it.
// Fails unless dim 0 is split 2 ways (mp) and dim 1 4 ways (sp, dp).
#include <iostream>

#include <shardflow/shardflow.h>

int main() try {
  // [layout]
  sf::Layout layout({2, 2, 2}, {"dp", "sp", "mp"});
  sf::TensorLayout a = layout("mp", {"sp", "dp"});   // "None" = not split
  // [layout]
  std::cout << a.str() << std::endl;
  return a.splits(0) == 2 && a.splits(1) == 4 ? 0 : 1;
} catch (const sf::Error& e) {
  std::cerr << "error: " << e.what() << std::endl;
  return 1;
}
