// The archive's C API refuses every bad input with an error code, reads its settings from
// options text, and reports a mapped archive in the text and JSON reports.
#include <gtest/gtest.h>
#include <metaspace/metaspace.h>

#include <cstring>
#include <metaspace/metaspace.hpp>
#include <nlohmann/json.hpp>

#include "unit/archive/archive_fixture.hpp"

namespace metaspace::test {
namespace {

std::string report(ms_metaspace_t* ms, bool json) {
  char* text = nullptr;
  size_t len = 0;
  FILE* out = open_memstream(&text, &len);
  ms_error_t e = json ? ms_write_report_json(ms, out, nullptr) : ms_print_report(ms, out, nullptr);
  std::fclose(out);
  EXPECT_EQ(e, MS_OK);
  std::string s(text, len);
  std::free(text);
  return s;
}

TEST(ArchiveApi, BuilderRefusesBadInput) {
  ms_settings_t s = archive_settings();
  EXPECT_EQ(ms_archive_allocate(nullptr, MS_SPACE_CLASS, 8), nullptr);
  EXPECT_EQ(ms_last_error(), MS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(ms_archive_mark_pointer(nullptr, &s), MS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(ms_archive_write(nullptr, "/tmp/x"), MS_ERR_INVALID_ARGUMENT);
  // A foreign handle (readable memory, not a builder).
  uint64_t not_a_builder[4] = {1, 2, 3, 4};
  EXPECT_EQ(ms_archive_set_root(reinterpret_cast<ms_archive_builder_t*>(not_a_builder), "x", &s),
            MS_ERR_INVALID_ARGUMENT);
  ms_archive_discard(nullptr);

  ms_settings_t bad = s;
  bad.class_alignment_bytes = 3;
  EXPECT_EQ(ms_archive_begin(&bad, 0), nullptr);
  EXPECT_EQ(ms_last_error(), MS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(ms_archive_begin(&s, 12345), nullptr);  // not aligned to the root chunk
  EXPECT_EQ(ms_last_error(), MS_ERR_INVALID_ARGUMENT);

  ms_archive_builder_t* b = ms_archive_begin(&s, 0);
  ASSERT_NE(b, nullptr) << ms_last_error_text();
  EXPECT_EQ(ms_archive_allocate(b, MS_SPACE_CLASS, 0), nullptr);
  EXPECT_EQ(ms_archive_allocate(b, static_cast<ms_space_t>(7), 8), nullptr);
  EXPECT_EQ(ms_archive_allocate(b, MS_SPACE_NONCLASS, size_t(1) << 40), nullptr);
  auto* k = static_cast<char*>(ms_archive_allocate(b, MS_SPACE_CLASS, 100));
  auto* m = static_cast<char*>(ms_archive_allocate(b, MS_SPACE_NONCLASS, 64));
  ASSERT_NE(k, nullptr);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(k) % 64, 0u);
  EXPECT_EQ(m[0], 0);  // zeroed
  EXPECT_EQ(ms_archive_mark_pointer(b, &s), MS_ERR_INVALID_ARGUMENT);      // not in a block
  EXPECT_EQ(ms_archive_mark_pointer(b, m + 4), MS_ERR_INVALID_ARGUMENT);   // misaligned
  EXPECT_EQ(ms_archive_mark_pointer(b, m + 64), MS_ERR_INVALID_ARGUMENT);  // past the end
  EXPECT_EQ(ms_archive_mark_narrow_class(b, m + 2), MS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(ms_archive_encode_class(b, m), 0u);  // non-class block
  EXPECT_EQ(ms_archive_encode_class(b, k + 8), 0u);  // interior
  EXPECT_EQ(ms_archive_set_root(b, "", k), MS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(ms_archive_set_root(b, std::string(60, 'x').c_str(), k), MS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(ms_archive_set_root(b, "r", &s), MS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(ms_archive_write(b, nullptr), MS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(ms_archive_write(b, "/nonexistent-dir/a.msa"), MS_ERR_ARCHIVE_IO);

  // A marked word holding a foreign address, a narrow slot naming no class: refused at write.
  TempDir dir;
  void* foreign = &s;
  std::memcpy(m, &foreign, 8);
  ASSERT_MS_OK(ms_archive_mark_pointer(b, m));
  EXPECT_EQ(ms_archive_write(b, dir.file("a").c_str()), MS_ERR_INVALID_ARGUMENT);
  std::memset(m, 0, 8);
  uint32_t narrow = 12345;
  std::memcpy(m + 8, &narrow, 4);
  ASSERT_MS_OK(ms_archive_mark_narrow_class(b, m + 8));
  EXPECT_EQ(ms_archive_write(b, dir.file("a").c_str()), MS_ERR_INVALID_ARGUMENT);
  narrow = ms_archive_encode_class(b, k);
  std::memcpy(m + 8, &narrow, 4);
  ASSERT_MS_OK(ms_archive_set_root(b, "k", k));
  ASSERT_MS_OK(ms_archive_write(b, dir.file("a").c_str()));
  ms_archive_discard(b);
}

TEST(ArchiveApi, QueriesWithoutArchive) {
  ms_metaspace_t* ms = ms_create(nullptr);
  ASSERT_NE(ms, nullptr);
  int x;
  EXPECT_EQ(ms_is_archived(ms, &x), 0);
  EXPECT_EQ(ms_is_archived(nullptr, &x), 0);
  EXPECT_EQ(ms_archive_root(ms, "last"), nullptr);
  EXPECT_EQ(ms_archive_root(nullptr, "last"), nullptr);
  EXPECT_EQ(ms_archive_status(ms, nullptr), MS_OK);
  EXPECT_EQ(ms_archive_status(nullptr, nullptr), MS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(report(ms, false).find("Archive"), std::string::npos);
  EXPECT_FALSE(nlohmann::json::parse(report(ms, true)).contains("archive"));
  ms_destroy(ms);
}

TEST(ArchiveApi, SettingsFromOptionsText) {
  ms_settings_t s;
  ms_settings_init(&s);
  EXPECT_EQ(s.archive_path, nullptr);
  EXPECT_EQ(s.archive_policy, MS_ARCHIVE_AUTO);
  EXPECT_EQ(s.archive_verify, 1);
  ASSERT_MS_OK(ms_settings_parse(&s, "archive=/tmp/app.msa,archive_policy=require,archive_verify=0"));
  EXPECT_STREQ(s.archive_path, "/tmp/app.msa");
  EXPECT_EQ(s.archive_policy, MS_ARCHIVE_REQUIRE);
  EXPECT_EQ(s.archive_verify, 0);
  EXPECT_EQ(ms_settings_parse(&s, "archive_policy=sometimes"), MS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(ms_settings_parse(&s, "archive="), MS_ERR_INVALID_ARGUMENT);
  // A caller with the first 0.2 layout has no archive fields: the options are refused, not dropped.
  ms_settings_t old;
  ASSERT_MS_OK(ms_settings_init_sized(&old, offsetof(ms_settings_t, archive_path)));
  EXPECT_EQ(ms_settings_parse(&old, "archive=/tmp/app.msa"), MS_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::strstr(ms_last_error_text(), "archive fields"), nullptr) << ms_last_error_text();
  ASSERT_MS_OK(ms_settings_parse(&old, "granule=16k"));
  s.archive_policy = 5;
  EXPECT_EQ(ms_create(&s), nullptr);
  EXPECT_EQ(ms_last_error(), MS_ERR_INVALID_ARGUMENT);
}

TEST(ArchiveApi, ReportsShowTheMappedArchive) {
  TempDir dir;
  MappedGraph g = dump_and_map(dir, archive_settings(), 100, 2);
  ms_metaspace_t* ms = g.ms;
  const std::string& path = g.path;
  uintptr_t base = g.base;
  ASSERT_NE(ms, nullptr) << ms_last_error_text();
  ms_loader_t* l = ms_loader_create(ms, MS_LOADER_STANDARD, 0);
  ASSERT_MS_OK(ms_deallocate(l, ms_archive_root(ms, "first"), 576));
  std::string text = report(ms, false);
  EXPECT_NE(text.find("Archive: " + path), std::string::npos) << text;
  EXPECT_NE(text.find("not relocated"), std::string::npos) << text;
  EXPECT_NE(text.find("1 deallocations ignored"), std::string::npos) << text;
  nlohmann::json j = nlohmann::json::parse(report(ms, true));
  const auto& a = j.at("archive");
  EXPECT_EQ(a.at("path"), path);
  EXPECT_EQ(a.at("mapped"), true);
  EXPECT_EQ(a.at("base").get<uint64_t>(), base);
  EXPECT_EQ(a.at("relocation_delta").get<int64_t>(), 0);
  EXPECT_EQ(a.at("relocated"), false);
  EXPECT_EQ(a.at("roots").get<int>(), 2);
  EXPECT_EQ(a.at("deallocations_ignored").get<int>(), 1);
  EXPECT_EQ(a.at("class_used_bytes").get<uint64_t>(), 100u * 576);
  EXPECT_GT(a.at("resident_bytes").get<uint64_t>(), 0u);  // verified: every page was read
  EXPECT_LE(a.at("resident_bytes").get<uint64_t>(), a.at("file_bytes").get<uint64_t>() + 4096);
  ms_destroy(ms);
}

TEST(ArchiveApi, CppWrapperDumpsAndMaps) {
  TempDir dir;
  std::string path = dir.file("cpp.msa");
  ms_settings_t s = archive_settings();
  {
    ms::ArchiveBuilder b(&s, free_address(256u << 20));
    auto* k = static_cast<ArchivedKlass*>(b.allocate(MS_SPACE_CLASS, 128));
    ASSERT_NE(k, nullptr);
    k->id = 7;
    k->narrow_self = b.encode_class(k);
    ASSERT_MS_OK(b.mark_narrow_class(&k->narrow_self));
    ASSERT_MS_OK(b.set_root("k", k));
    b.write(path.c_str());
    EXPECT_THROW(b.write("/nonexistent-dir/x"), ms::Error);
  }
  ms::Metaspace ms(ms::Settings().class_space(s.class_space_bytes).class_alignment(64)
                       .archive(path.c_str(), MS_ARCHIVE_REQUIRE));
  EXPECT_EQ(ms.stats().archive.mapped, 1);
  EXPECT_THROW(ms::Metaspace(ms::Settings().archive("/nonexistent-dir/x", MS_ARCHIVE_REQUIRE)),
               ms::Error);
}

}  // namespace
}  // namespace metaspace::test
