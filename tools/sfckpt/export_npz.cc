#include "tools/sfckpt/export_npz.h"

#include <shardflow/train/checkpoint/reader.h>
#include "tools/sfckpt/npz_writer.h"

namespace sf::sfckpt {

int export_npz(const std::string& path, const std::string& npz_file) {
  ckpt::CheckpointReader reader(path);
  NpzWriter npz(npz_file);
  // One tensor gathered at a time: the export needs the largest tensor's memory, not all.
  for (const ckpt::TensorEntry& t : reader.manifest().tensors) npz.add(t.name, reader.read_whole(t.name));
  npz.finish();
  return static_cast<int>(reader.manifest().tensors.size());
}

}  // namespace sf::sfckpt
