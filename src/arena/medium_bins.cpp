#include "arena/medium_bins.hpp"


namespace metaspace {

bool MediumBins::verify(const BlockBounds& bounds) const {
  return exact_bins::verify(bins_.bin, kBins, kMinWords, bins_.mask, "medium bin", bounds);
}

}  // namespace metaspace
