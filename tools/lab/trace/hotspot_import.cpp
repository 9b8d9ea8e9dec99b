#include "trace/hotspot_import.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "trace/line_source.hpp"
#include "trace/text_cursor.hpp"

namespace lab {
namespace {

constexpr std::uint64_t kWordBytes = 8;
constexpr std::uint64_t kNone = ~std::uint64_t{0};
// HotSpot 25's root chunk is 16 MiB = 2M words; level n is half of level n-1.
constexpr std::uint64_t kRootChunkWords = std::uint64_t{1} << 21;

struct Arena {
  bool klass = false;
  std::uint64_t loader = kNone;  // index into loaders; kNone until its CLMS line
  int first_chunk_level = -1;    // level of the first chunk it got: tells the loader's kind
};

struct Loader {
  std::uint64_t id = 0;
  std::uint64_t nonclass_arena = 0;
  std::uint64_t class_arena = 0;
  bool announced = false;  // its B line is written
  std::uint64_t used_words[2] = {0, 0};  // HotSpot's used: words taken from its chunks
  std::vector<std::uint64_t> addresses;  // starts of its allocations (some freed since)
};

struct Live {
  std::uint64_t allocation;
  std::uint64_t loader;  // index into loaders
  std::uint64_t words;
};

// The kind is not in the log; the arena growth policy is. HotSpot gives each metaspace type its own
// chunk sequence, and the first chunk an arena gets shows it: the boot loader starts with 4 MiB
// non-class / 256 KiB class chunks, a standard loader with 4 KiB / 2 KiB, a ClassMirrorHolder
// (hidden class) loader with 1 KiB / 1 KiB, a reflection loader with 2 KiB / 1 KiB. A first chunk
// is larger than the policy's when the first request does not fit, and smaller when the chunk
// manager hands out a free smaller chunk it already has; so each arena votes and the larger kind
// wins: a standard loader whose non-class arena started small still shows its 2 KiB class chunk.
LoaderKind infer_kind(const Arena* nonclass, const Arena* klass) {
  const auto words = [](int level) { return kRootChunkWords >> level; };
  int vote = -1;  // 0 micro, 1 standard, 2 boot
  if (nonclass && nonclass->first_chunk_level >= 0) {
    const auto w = words(nonclass->first_chunk_level);
    vote = std::max(vote, w >= 32 * 1024 ? 2 : w >= 512 ? 1 : 0);  // >= 256 KiB, >= 4 KiB
  }
  if (klass && klass->first_chunk_level >= 0) {
    const auto w = words(klass->first_chunk_level);
    vote = std::max(vote, w >= 32 * 1024 ? 2 : w >= 256 ? 1 : 0);  // >= 256 KiB, >= 2 KiB
  }
  switch (vote) {
    case 2: return LoaderKind::boot;
    case 0: return LoaderKind::micro;
    default: return LoaderKind::standard;
  }
}

std::uint64_t parse_size(double value, std::string_view unit) {
  double scale = 1;
  if (unit == "KB") scale = 1024.0;
  if (unit == "MB") scale = 1024.0 * 1024.0;
  if (unit == "GB") scale = 1024.0 * 1024.0 * 1024.0;
  return static_cast<std::uint64_t>(value * scale + 0.5);
}

// "Both: 3.80 MB used." and "Both: 1.06 GB reserved, 3.88 MB ( <1%) committed." from
// PrintMetaspaceStatisticsAtExit. Precision is HotSpot's (two decimals).
void read_exit_statistics(const std::string& path, TraceEvent& marker) {
  LineSource lines(path);
  std::string_view line;
  bool used = false, committed = false;
  while (lines.next(line)) {
    const auto both = line.find("Both:");
    if (both == std::string_view::npos) continue;
    std::string text(line.substr(both + 5));
    double a = 0, b = 0;
    char ua[4] = {}, ub[4] = {};
    if (!used && std::sscanf(text.c_str(), " %lf %3s used.", &a, ua) == 2 && text.find("used.") != std::string::npos) {
      marker.figures.emplace_back("reported_used", parse_size(a, ua));
      used = true;
    } else if (!committed && std::sscanf(text.c_str(), " %lf %3s reserved, %lf %3s", &a, ua, &b, ub) == 4 &&
               text.find("committed") != std::string::npos) {
      marker.figures.emplace_back("reported_committed", parse_size(b, ub));
      committed = true;
    }
  }
}

class Importer {
 public:
  Importer(const std::string& path, TraceWriter& out) : lines_(path), out_(out) {
    live_.reserve(1 << 16);
  }

  ImportCounts run(const ImportOptions& options) {
    std::string_view line;
    while (lines_.next(line)) {
      ++counts_.lines;
      if (lines_.ended_without_newline())
        fail("the log ends in the middle of a line (truncated?)", "a complete last line");
      handle(line);
    }
    if (counts_.loaders == 0)
      throw HotSpotLogError(lines_.path() + ": no 'CLMS @.. : born' line: not a JDK 16-25 -Xlog:metaspace*=trace log "
                                            "(or the head was lost to log rotation; record with filecount=0)");
    // Loaders that never allocated nor died still were born.
    for (auto& l : loaders_) announce(l);
    TraceEvent exit = hotspot_marker("exit");
    if (!options.exit_statistics_path.empty()) read_exit_statistics(options.exit_statistics_path, exit);
    emit(exit);
    counts_.hotspot_committed_bytes = (committed_words_[0] + committed_words_[1]) * kWordBytes;
    counts_.hotspot_used_bytes = (used_words_[0] + used_words_[1]) * kWordBytes;
    counts_.live_bytes = live_bytes_;
    counts_.dialect = dialect_;
    return counts_;
  }

 private:
  // The message without its decorations ("[12ns][345] " or "[0.01s][trace][metaspace] "); `thread`
  // is the decoration made of digits alone (the tid of `record`'s "uptimenanos,tid"), or 0.
  static std::string_view message(std::string_view line, std::uint64_t& thread) {
    thread = 0;
    while (!line.empty() && line[0] == '[') {
      const auto close = line.find(']');
      if (close == std::string_view::npos) break;
      const auto inside = line.substr(1, close - 1);
      if (!inside.empty() && inside.find_first_not_of("0123456789") == std::string_view::npos) {
        TextCursor digits(inside);
        digits.decimal(thread);
      }
      line.remove_prefix(close + 1);
    }
    if (!line.empty() && line[0] == ' ') line.remove_prefix(1);
    return line;
  }

  [[noreturn]] void fail(const std::string& what, const std::string& expected) const {
    throw HotSpotLogError(fmt::format("{}:{}: {}; expected {}", lines_.path(), lines_.line_number(), what, expected));
  }

  void handle(std::string_view line) {
    const std::string_view m = message(line, thread_);
    TextCursor c(m);
    if (c.literal("Arena @")) return arena_line(c, m);
    if (c.literal("CLMS @")) return clms_line(c, m);
    if (c.literal("VsListNode @")) return node_line(c, m);
    if (c.literal("GC(")) return gc_line(c);
    if (c.literal("Compressed class space mapped at: ")) return class_space_line(c, m);
    if (c.literal("Metaspace::allocate: ")) return allocate_return_line(c, m);
    // JDK 11-15's metaspace (before the elastic one of JDK 16) logs its space managers' chunks but
    // not one allocation: no trace can be made of it.
    if (c.starts_with("SpaceManager(): ") || c.starts_with("~SpaceManager(): ") ||
        c.starts_with("SpaceManager::grow_and_allocate"))
      fail("this is a JDK 11-15 log ('SpaceManager' lines): that metaspace logs no allocation, so no trace can be "
           "made of it",
           "a JDK 16-25 log (record the program on JDK 16-25: metaspace-lab record --java JDK_HOME -- ...)");
    ++counts_.unknown_lines;
  }

  void class_space_line(TextCursor& c, std::string_view m) {
    if (!c.address(class_space_begin_) || !c.literal("-") || !c.address(class_space_end_))
      fail(fmt::format("malformed '{}'", m), "'Compressed class space mapped at: 0x..-0x.., ...'");
  }

  void node_line(TextCursor& c, std::string_view m) {
    std::uint64_t node = 0, base = 0;
    if (!c.address(node) || !c.literal(" base ") || !c.address(base) || !c.literal(" : "))
      fail(fmt::format("malformed '{}'", m), "'VsListNode @0x.. base 0x.. : ...'");
    const int space = base >= class_space_begin_ && base < class_space_end_ ? 1 : 0;
    std::uint64_t words = 0;
    if (c.literal("... committed ")) {
      if (!c.decimal(words) || !c.literal(" additional words."))
        fail(fmt::format("malformed '{}'", m), "'... committed N additional words.'");
      committed_words_[space] += words;
      committed_rising_ = true;
    } else if (c.literal("... uncommitted ")) {
      if (!c.decimal(words) || !c.literal(" words."))
        fail(fmt::format("malformed '{}'", m), "'... uncommitted N words.'");
      peak_marker_if_rising();
      if (words > committed_words_[space])
        fail("more uncommitted than committed", "commit lines for every uncommitted range (is the head missing?)");
      committed_words_[space] -= words;
    }
  }

  // "GC(3) Metaspace: 6487K(6656K)->6420K(6656K) NonClass: ... Class: ..." ends a GC: HotSpot's own
  // figures after it, beside the exact ones rebuilt from the log.
  void gc_line(TextCursor& c) {
    std::uint64_t gc = 0, used_before = 0, committed_before = 0, used_after = 0, committed_after = 0;
    if (!c.decimal(gc) || !c.literal(") ")) {
      ++counts_.unknown_lines;
      return;
    }
    if (!c.literal("Metaspace: ")) return;  // the other GC lines of the metaspace tags
    if (!c.decimal(used_before) || !c.literal("K(") || !c.decimal(committed_before) || !c.literal("K)->") ||
        !c.decimal(used_after) || !c.literal("K(") || !c.decimal(committed_after) || !c.literal("K)"))
      fail("malformed GC metaspace summary", "'GC(n) Metaspace: uK(cK)->uK(cK) ...'");
    ++counts_.gcs;
    TraceEvent m = hotspot_marker("gc");
    m.figures.emplace_back("gc", gc);
    m.figures.emplace_back("reported_used", used_after * 1024);
    m.figures.emplace_back("reported_committed", committed_after * 1024);
    emit(m);
    unload_pending_ = false;
  }

  void clms_line(TextCursor& c, std::string_view m) {
    std::uint64_t clms = 0;
    if (!c.address(clms) || !c.literal(" : ")) fail(fmt::format("malformed '{}'", m), "'CLMS @0x.. : ...'");
    if (c.literal("born (nonclass arena: ")) {
      std::uint64_t nonclass = 0, klass = 0;
      if (!c.address(nonclass) || !c.literal(", class arena: ") || !c.address(klass))
        fail(fmt::format("malformed '{}'", m), "'CLMS @0x.. : born (nonclass arena: 0x.., class arena: 0x..'");
      Loader l;
      l.id = loaders_.size();
      l.nonclass_arena = nonclass;
      l.class_arena = klass;
      const std::uint64_t index = loaders_.size();
      for (std::uint64_t a : {nonclass, klass}) {
        if (a == 0) continue;  // no class arena without compressed class pointers
        auto it = arenas_.find(a);
        if (it == arenas_.end())
          fail(fmt::format("CLMS @0x{:x} names arena @0x{:x} that was never born", clms, a),
               "its 'Arena @0x.. (..): born.' line before");
        it->second.loader = index;
      }
      loaders_.push_back(std::move(l));
      clms_[clms] = index;
      ++counts_.loaders;
      // Births after deaths: the unloading is over; keep HotSpot's figures of that moment.
      if (unload_pending_) unload_marker();
    } else if (c.literal("dies.")) {
      auto it = clms_.find(clms);
      if (it == clms_.end()) fail(fmt::format("CLMS @0x{:x} dies but was never born", clms), "its born line before");
      die(loaders_[it->second]);
      clms_.erase(it);
    }
  }

  void arena_line(TextCursor& c, std::string_view m) {
    std::uint64_t address = 0;
    if (!c.address(address)) fail(fmt::format("malformed '{}'", m), "'Arena @0x.. (...)'");
    bool klass;
    Dialect dialect;
    if (c.literal(" (non-class arena): ")) {
      klass = false, dialect = Dialect::jdk22_25;
    } else if (c.literal(" (class arena): ")) {
      klass = true, dialect = Dialect::jdk22_25;
    } else if (c.literal(" (non-class sm): ")) {
      klass = false, dialect = Dialect::jdk16_21;
    } else if (c.literal(" (class sm): ")) {
      klass = true, dialect = Dialect::jdk16_21;
    } else {
      fail(fmt::format("malformed '{}'", m), "'(non-class arena): ' or '(class arena): ' (JDK 22-25), "
                                             "'(non-class sm): ' or '(class sm): ' (JDK 16-21)");
    }
    if (dialect_ == Dialect::unknown) dialect_ = dialect;
    if (dialect != dialect_)
      fail("arena lines of two JDK dialects in one log", fmt::format("only {} lines", dialect_name(dialect_)));
    if (dialect == Dialect::jdk16_21) return sm_arena_line(c, m, address, klass);
    if (c.literal("born.")) {
      // The address may be a dead arena's: a fresh lifetime starts here.
      arenas_[address] = Arena{klass, kNone, -1};
      return;
    }
    if (c.literal("returning block (@")) return allocation(c, m, address, klass);
    if (c.literal("added to fbl: block (@")) return added_to_fbl(c, m, address);
    if (c.literal("allocated new chunk @")) return first_chunk(c, m, address);
    if (c.literal(": dies.")) {
      arenas_.erase(address);
      return;
    }
    // requested, after allocation, salvaging, enlarged chunk, return chunk, returned N chunks ...:
    // HotSpot's bookkeeping, not the workload.
  }

  // JDK 16-21 ("Arena @A (non-class sm): ..."): the size is on the "requested N words." line, the
  // address on "returning P." (from the arena's chunk) or, for a hit in the free-block list
  // ("taken from fbl (now: c, t)."), only on the "Metaspace::allocate: type T return P." line the
  // same thread logs after the arena's lock is dropped. "deallocating P, word size: N." is a free;
  // HotSpot's own wastage goes to the free-block list without a line.
  void sm_arena_line(TextCursor& c, std::string_view m, std::uint64_t address, bool klass) {
    if (c.literal(": born.") || c.literal("born.")) {
      arenas_[address] = Arena{klass, kNone, -1};
      return;
    }
    if (c.literal("requested ")) {
      std::uint64_t words = 0;
      if (!c.decimal(words) || !c.literal(" words.")) fail(fmt::format("malformed '{}'", m), "'requested N words.'");
      requested_[address] = words;
      return;
    }
    if (c.literal("returning ")) {
      std::uint64_t p = 0;
      if (!c.address(p)) fail(fmt::format("malformed '{}'", m), "'returning 0x...'");
      // HotSpot takes at least two words (the smallest block its free-block list can hold).
      const std::uint64_t words = take_request(address, m);
      record_allocation(address, klass, p, words, /*from_chunk=*/true, 0, words < 2 ? 2 - words : 0);
      pending_fbl_.erase(thread_);
      return;
    }
    if (c.literal("taken from fbl")) {
      pending_fbl_[thread_] = PendingFbl{address, klass, take_request(address, m)};
      return;
    }
    if (c.literal("deallocating ")) {
      std::uint64_t p = 0, words = 0;
      if (!c.address(p) || !c.literal(", word size: ") || !c.decimal(words))
        fail(fmt::format("malformed '{}'", m), "'deallocating 0x.., word size: N.'");
      free_at(address, p);
      return;
    }
    if (c.literal("allocated new chunk @")) return first_chunk(c, m, address);
    if (c.literal("salvaging chunk @")) {
      // The chunk's committed free tail goes to the free-block list, counted as used.
      std::uint64_t used = 0, committed = 0;
      if (!c.skip_past(", used: ") || !c.decimal(used) || !c.literal(", committed: ") || !c.decimal(committed) ||
          committed < used)
        fail(fmt::format("malformed '{}'", m), "'salvaging chunk @0x.., .., used: N, committed: N, ...'");
      auto it = arenas_.find(address);
      if (it != arenas_.end() && it->second.loader != kNone) {
        loaders_[it->second.loader].used_words[klass] += committed - used;
        used_words_[klass] += committed - used;
      }
      return;
    }
    if (c.literal(": dies.")) {
      arenas_.erase(address);
      requested_.erase(address);
      return;
    }
  }

  std::uint64_t take_request(std::uint64_t arena, std::string_view m) {
    auto it = requested_.find(arena);
    if (it == requested_.end())
      fail(fmt::format("'{}' without a 'requested N words.' line of its arena before", m),
           "'requested N words.' before each allocation");
    const std::uint64_t words = it->second;
    requested_.erase(it);
    return words;
  }

  // "Metaspace::allocate: type T return P.": the address of a JDK 16-21 free-block-list hit of this
  // thread; otherwise a repeat of the allocation line before (the object type is not in the trace).
  void allocate_return_line(TextCursor& c, std::string_view m) {
    auto it = pending_fbl_.find(thread_);
    if (it == pending_fbl_.end()) return;
    std::uint64_t p = 0;
    if (!c.skip_past(" return ") || !c.address(p))
      fail(fmt::format("malformed '{}'", m), "'Metaspace::allocate: type T return 0x...'");
    const PendingFbl pending = it->second;
    pending_fbl_.erase(it);
    record_allocation(pending.arena, pending.klass, p, pending.words, /*from_chunk=*/false, 0, 0);
  }

  void first_chunk(TextCursor& c, std::string_view m, std::uint64_t address) {
    auto it = arenas_.find(address);
    if (it != arenas_.end() && it->second.first_chunk_level < 0) {
      std::uint64_t level = 0;
      if (!c.skip_past(", level lv") || !c.decimal(level))
        fail(fmt::format("malformed '{}'", m), "'allocated new chunk @0x.., u, base 0x.., level lvNN ...'");
      it->second.first_chunk_level = static_cast<int>(level);
    }
  }

  Loader& owner(std::uint64_t arena_address, std::string_view what) {
    auto it = arenas_.find(arena_address);
    if (it == arenas_.end() || it->second.loader == kNone)
      fail(fmt::format("{} in arena @0x{:x}, which was never born", what, arena_address),
           "its 'Arena .. born.' and 'CLMS .. born' lines before (was the head of the log rotated away? record "
           "with filecount=0)");
    return loaders_[it->second.loader];
  }

  // "returning block (@P word size N) taken from arena|fbl, no wastage|wastage block (@W word size M)"
  // is one allocation. The inner free-block-list line "... with wastage block (..) - taken from fbl
  // (now: c, t)." precedes the outer one for the same request and is not counted.
  void allocation(TextCursor& c, std::string_view m, std::uint64_t arena, bool klass) {
    std::uint64_t p = 0, words = 0;
    if (!c.address(p) || !c.literal(" word size ") || !c.decimal(words) || !c.literal(") "))
      fail(fmt::format("malformed '{}'", m), "'returning block (@0x.. word size N) ...'");
    if (c.literal("with wastage block")) return;
    bool from_chunk;
    if (c.literal("taken from arena, ")) {
      from_chunk = true;
    } else if (c.literal("taken from fbl, ")) {
      from_chunk = false;
    } else {
      fail(fmt::format("malformed '{}'", m), "'taken from arena, ' or 'taken from fbl, '");
    }
    std::uint64_t waste_at = 0, waste_words = 0;
    if (c.literal("wastage block (@")) {
      if (!c.address(waste_at) || !c.literal(" word size ") || !c.decimal(waste_words))
        fail(fmt::format("malformed '{}'", m), "'wastage block (@0x.. word size N)'");
    } else if (!c.literal("no wastage")) {
      fail(fmt::format("malformed '{}'", m), "'no wastage' or 'wastage block (@0x.. word size N)'");
    }
    record_allocation(arena, klass, p, words, from_chunk, waste_at, waste_words);
  }

  void record_allocation(std::uint64_t arena, bool klass, std::uint64_t p, std::uint64_t words, bool from_chunk,
                         std::uint64_t waste_at, std::uint64_t waste_words) {
    if (words == 0) fail("an allocation of 0 words", "a positive word size");
    Loader& l = owner(arena, "an allocation");
    if (unload_pending_) unload_marker();
    announce(l);
    const std::uint64_t loader_index = l.id;
    const std::uint64_t id = next_allocation_++;
    out_.allocate(l.id, klass ? Space::klass : Space::nonclass, words * kWordBytes, id);
    ++counts_.allocations;
    if (klass) ++counts_.class_allocations;
    counts_.allocated_bytes += words * kWordBytes;
    live_bytes_ += words * kWordBytes;
    auto [it, fresh] = live_.try_emplace(p, Live{id, loader_index, words});
    if (!fresh) it->second = Live{id, loader_index, words};  // a free the log did not show; keep the newest
    l.addresses.push_back(p);
    if (from_chunk) {
      l.used_words[klass] += words + waste_words;
      used_words_[klass] += words + waste_words;
    }
    if (waste_words > 0 && waste_at != 0) announced_wastage_.insert(waste_at);
  }

  // A real free iff P is the start of a live allocation; otherwise HotSpot's own wastage (salvaged
  // chunk tails, split remainders, Klass alignment gaps), announced by the allocation line before.
  void added_to_fbl(TextCursor& c, std::string_view m, std::uint64_t arena) {
    std::uint64_t p = 0, words = 0;
    if (!c.address(p) || !c.literal(" word size ") || !c.decimal(words))
      fail(fmt::format("malformed '{}'", m), "'added to fbl: block (@0x.. word size N), (now: c, t).'");
    if (live_.find(p) == live_.end()) {
      ++counts_.wastage_blocks;
      if (announced_wastage_.erase(p) == 0) ++counts_.unannounced_wastage;
      return;
    }
    free_at(arena, p);
  }

  // Frees the live allocation that starts at p (received by `arena`); nothing if none does.
  void free_at(std::uint64_t arena, std::uint64_t p) {
    auto it = live_.find(p);
    if (it == live_.end()) return;
    const Live gone = it->second;
    live_.erase(it);
    Loader& l = loaders_[gone.loader];
    const Loader& receiver = owner(arena, "a free");
    if (receiver.id != l.id) ++counts_.cross_arena_frees;
    out_.free(l.id, gone.allocation);
    ++counts_.frees;
    counts_.freed_bytes += gone.words * kWordBytes;
    live_bytes_ -= gone.words * kWordBytes;
  }

  void die(Loader& l) {
    peak_marker_if_rising();
    announce(l);
    out_.dies(l.id);
    ++counts_.deaths;
    for (std::uint64_t p : l.addresses) {
      auto it = live_.find(p);
      if (it != live_.end() && it->second.loader == l.id) {
        live_bytes_ -= it->second.words * kWordBytes;
        live_.erase(it);
      }
    }
    l.addresses = {};
    for (int s = 0; s < 2; ++s) used_words_[s] -= l.used_words[s];
    unload_pending_ = true;
  }

  void announce(Loader& l) {
    if (l.announced) return;
    auto find = [&](std::uint64_t a) -> const Arena* {
      auto it = arenas_.find(a);
      return a != 0 && it != arenas_.end() ? &it->second : nullptr;
    };
    const LoaderKind kind = infer_kind(find(l.nonclass_arena), find(l.class_arena));
    if (kind == LoaderKind::boot) ++counts_.boot_loaders;
    if (kind == LoaderKind::micro) ++counts_.micro_loaders;
    out_.born(l.id, kind);
    l.announced = true;
  }

  TraceEvent hotspot_marker(const std::string& label) const {
    TraceEvent m;
    m.type = TraceEvent::Type::marker;
    m.label = label;
    m.figures = {{"committed", (committed_words_[0] + committed_words_[1]) * kWordBytes},
                 {"used", (used_words_[0] + used_words_[1]) * kWordBytes},
                 {"class_committed", committed_words_[1] * kWordBytes},
                 {"class_used", used_words_[1] * kWordBytes}};
    return m;
  }

  // HotSpot's committed only grows while classes load and only shrinks after loaders died, so its
  // peak between two markers is its value right before the first death or uncommit that follows
  // a commit. A marker there shows the peak with the trace's live of that moment (loading is
  // where HotSpot's committed is highest; markers at GCs alone miss it: 36.7 MiB at GCs against
  // 42.2 MiB over one log).
  void peak_marker_if_rising() {
    if (!committed_rising_) return;
    emit(hotspot_marker("peak"));
  }

  // Deaths not followed by a GC summary (the gc tags were not logged): the first event after them
  // carries HotSpot's figures after the unloading.
  void unload_marker() {
    unload_pending_ = false;
    emit(hotspot_marker("unload"));
  }

  void emit(const TraceEvent& m) {
    committed_rising_ = false;  // every marker records HotSpot's committed of its moment
    out_.marker(m);
    ++counts_.markers;
  }

  struct PendingFbl {
    std::uint64_t arena;
    bool klass;
    std::uint64_t words;
  };

  LineSource lines_;
  TraceWriter& out_;
  Dialect dialect_ = Dialect::unknown;
  std::uint64_t thread_ = 0;                                   // of the line being handled
  std::unordered_map<std::uint64_t, std::uint64_t> requested_;  // JDK 16-21: arena -> words asked
  std::unordered_map<std::uint64_t, PendingFbl> pending_fbl_;  // JDK 16-21: thread -> fbl hit
  ImportCounts counts_;
  std::unordered_map<std::uint64_t, Arena> arenas_;
  std::unordered_map<std::uint64_t, std::uint64_t> clms_;
  std::vector<Loader> loaders_;
  std::unordered_map<std::uint64_t, Live> live_;
  std::unordered_set<std::uint64_t> announced_wastage_;
  std::uint64_t next_allocation_ = 0;
  std::uint64_t committed_words_[2] = {0, 0};
  std::uint64_t used_words_[2] = {0, 0};
  std::uint64_t live_bytes_ = 0;
  std::uint64_t class_space_begin_ = 0;
  std::uint64_t class_space_end_ = 0;
  bool unload_pending_ = false;
  bool committed_rising_ = false;  // committed grew since the last marker
};

}  // namespace

const char* dialect_name(Dialect d) {
  switch (d) {
    case Dialect::jdk16_21: return "JDK 16-21 ('(non-class sm)' lines)";
    case Dialect::jdk22_25: return "JDK 22-25 ('(non-class arena)' lines)";
    case Dialect::unknown: break;
  }
  return "unknown";
}

nlohmann::json ImportCounts::to_json() const {
  return {{"lines", lines},
          {"unknown_lines", unknown_lines},
          {"loaders", loaders},
          {"boot_loaders", boot_loaders},
          {"micro_loaders", micro_loaders},
          {"deaths", deaths},
          {"allocations", allocations},
          {"class_allocations", class_allocations},
          {"allocated_bytes", allocated_bytes},
          {"frees", frees},
          {"freed_bytes", freed_bytes},
          {"cross_arena_frees", cross_arena_frees},
          {"wastage_blocks", wastage_blocks},
          {"unannounced_wastage", unannounced_wastage},
          {"gcs", gcs},
          {"markers", markers},
          {"hotspot_committed_bytes", hotspot_committed_bytes},
          {"hotspot_used_bytes", hotspot_used_bytes},
          {"live_bytes", live_bytes},
          {"dialect", dialect_name(dialect)}};
}

ImportCounts import_hotspot_log(const std::string& log_path, TraceWriter& out, const ImportOptions& options) {
  Importer importer(log_path, out);
  return importer.run(options);
}

}  // namespace lab
