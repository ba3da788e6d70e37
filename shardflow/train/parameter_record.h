// The parameters a network reads, recorded while a program's graph is built: Cell::param
// reports each one, so that a program built from a loss function alone (value_and_grad,
// ForwardFunction) binds every Parameter node of its graph — BatchNorm's moving statistics
// too, which are neither differentiated nor in the list the caller passes.
//
// Threading: the record is per thread; one graph is built at a time on a thread. Records
// nest (an inner one hides the outer one until it ends).
#pragma once

#include <shardflow/train/parameter.h>

namespace sf::nn {

class ParameterRecord {
 public:
  // Records on the calling thread until destroyed.
  ParameterRecord();
  ~ParameterRecord();
  ParameterRecord(const ParameterRecord&) = delete;
  ParameterRecord& operator=(const ParameterRecord&) = delete;

  // Each parameter read, once, in the order first read.
  const ParameterList& parameters() const { return params_; }

 private:
  friend void parameter_read(const Parameter& p);
  ParameterRecord* outer_;
  ParameterList params_;
};

// Called by Cell::param; a no-op when nothing records.
void parameter_read(const Parameter& p);

}  // namespace sf::nn
