// The synthetic workload must look like the measured one (docs/workload-model.md): these tests
// draw many classes and hold the figures to the model's ranges.
#include <gtest/gtest.h>

#include <algorithm>
#include <stdexcept>

#include "workload.hpp"

namespace lab {
namespace {

struct Figures {
  double allocs_per_class = 0, klass_mean_words = 0, nonclass_words_per_class = 0;
  double le8 = 0, le16 = 0, gt40 = 0, dealloc = 0, klass_in_cluster = 0;
  std::size_t klass_min_words = SIZE_MAX;
};

Figures measure(const WorkloadParams& p, std::size_t classes) {
  Workload w(p);
  ClassShape shape;
  Figures f;
  std::size_t allocs = 0, le8 = 0, le16 = 0, gt40 = 0, deallocs = 0, nonclass_allocs = 0, in_cluster = 0;
  double klass_words = 0, nonclass_words = 0;
  auto count = [&](std::size_t words) {
    ++allocs;
    le8 += words <= 8;
    le16 += words <= 16;
    gt40 += words > 40;
  };
  for (std::size_t i = 0; i < classes; ++i) {
    w.next_class(shape);
    const std::size_t kw = shape.klass_bytes / 8;
    count(kw);
    klass_words += kw;
    f.klass_min_words = std::min(f.klass_min_words, kw);
    in_cluster += shape.klass_bytes >= 500 && shape.klass_bytes <= 1024;
    for (auto b : shape.nonclass_bytes) {
      count(b / 8);
      nonclass_words += b / 8;
    }
    nonclass_allocs += shape.nonclass_bytes.size();
    deallocs += shape.dealloc_indices.size();
  }
  f.allocs_per_class = static_cast<double>(allocs) / classes;
  f.klass_mean_words = klass_words / classes;
  f.nonclass_words_per_class = nonclass_words / classes;
  f.le8 = static_cast<double>(le8) / allocs;
  f.le16 = static_cast<double>(le16) / allocs;
  f.gt40 = static_cast<double>(gt40) / allocs;
  f.dealloc = static_cast<double>(deallocs) / nonclass_allocs;
  f.klass_in_cluster = static_cast<double>(in_cluster) / classes;
  return f;
}

void expect_within_model(const Figures& f) {
  EXPECT_GE(f.le8, 0.34);
  EXPECT_LE(f.le8, 0.43);
  EXPECT_GE(f.le16, 0.80);
  EXPECT_LE(f.le16, 0.91);
  EXPECT_GE(f.gt40, 0.05);
  EXPECT_LE(f.gt40, 0.10);
}

TEST(Workload, DefaultMatchesTheGeneratedClassesRow) {
  WorkloadParams p;
  const Figures f = measure(p, 20000);
  EXPECT_NEAR(f.allocs_per_class, 38.0, 0.3);
  EXPECT_NEAR(f.klass_mean_words, 71.5, 0.7);
  EXPECT_GE(f.klass_min_words, 66u);
  EXPECT_GE(f.klass_in_cluster, 0.98);  // clustered between 500 B and 1 KiB, rare tail
  EXPECT_NEAR(f.nonclass_words_per_class, 453.0, 453.0 * 0.03);
  EXPECT_NEAR(f.dealloc, 0.001, 0.0004);
  expect_within_model(f);
}

TEST(Workload, OtherRowsOfTheModelAreReachableByFlags) {
  WorkloadParams javac;
  javac.allocs_per_class = 40;
  javac.nonclass_words_per_class = 700;
  javac.klass_mean_words = 83;
  const Figures f = measure(javac, 20000);
  EXPECT_NEAR(f.klass_mean_words, 83.0, 1.0);
  EXPECT_NEAR(f.nonclass_words_per_class, 700.0, 700.0 * 0.03);
  expect_within_model(f);
}

TEST(Workload, SameSeedSameClassesOtherSeedOtherClasses) {
  WorkloadParams p;
  Workload a(p), b(p);
  p.seed = 43;
  Workload c(p);
  ClassShape sa, sb, sc;
  bool all_same_as_c = true;
  for (int i = 0; i < 1000; ++i) {
    a.next_class(sa);
    b.next_class(sb);
    c.next_class(sc);
    ASSERT_EQ(sa.klass_bytes, sb.klass_bytes);
    ASSERT_EQ(sa.nonclass_bytes, sb.nonclass_bytes);
    ASSERT_EQ(sa.dealloc_indices, sb.dealloc_indices);
    all_same_as_c &= sa.nonclass_bytes == sc.nonclass_bytes;
  }
  EXPECT_FALSE(all_same_as_c);
}

TEST(Workload, MicroClassesAreOneSmallKlassAndAFewHundredWords) {
  WorkloadParams p;
  Workload w(p);
  ClassShape s;
  for (int i = 0; i < 2000; ++i) {
    w.next_micro_class(s);
    EXPECT_EQ(s.klass_bytes, 66u * 8);
    std::size_t words = 0;
    for (auto b : s.nonclass_bytes) words += b / 8;
    EXPECT_GE(words, 120u);
    EXPECT_LE(words, 320u);
  }
}

TEST(Workload, UnreachableParametersAreRejectedNamingTheFlag) {
  WorkloadParams p;
  p.small_fraction = 0.6;
  p.medium_fraction = 0.4;
  try {
    p.validate();
    FAIL() << "expected invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("--small-fraction"), std::string::npos) << e.what();
  }
  WorkloadParams q;
  q.nonclass_words_per_class = 100;  // blocks > 40 words could not exist
  EXPECT_THROW(q.validate(), std::invalid_argument);
}

}  // namespace
}  // namespace lab
