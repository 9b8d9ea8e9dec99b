// Free blocks larger than the bins, in an AVL tree ordered by size that lives inside the blocks
// themselves. One tree node per distinct size; further blocks of that size hang off it in a list.
// Finds the smallest block ≥ n (best fit) in O(log n) and knows its largest size.
//
//            [40w]──list──[40w]──[40w]
//           /     \     (left: smaller sizes, right: larger)
//       [35w]     [90w]
#pragma once

#include <cstddef>
#include <cstdint>

#include "arena/block_bounds.hpp"

namespace metaspace {

class BlockTree {
 public:
  static constexpr size_t kMinWords = 7;  // room for a node in the block

  void add(void* p, size_t words, unsigned tag = 0);
  void* take(size_t words, size_t* got_words, unsigned* tag = nullptr);
  // Checked mode, before take(): the block take(words) would hand out, found reading a node only
  // after `bounds` accepted it and its canary matched, together with every node take()'s removal
  // and rebalancing would then read (three levels below each node on its paths, the right
  // spines that give the new largest size). False if one of them was overwritten: take()
  // must not run. True with *block null if no block fits.
  bool peek_checked(size_t words, const BlockBounds& bounds, const void** block,
                    size_t* got_words, unsigned* tag) const;
  // Bytes at the start of a tree block that hold its node (the rest of a freed block keeps what
  // was there when it was filed).
  static constexpr size_t kNodeBytes = 6 * 8;

  bool empty() const { return root_ == nullptr; }
  size_t count() const { return count_; }
  size_t words() const { return words_; }
  // Cached: the fast path's fit_max is published after every free or reuse, which would
  // otherwise walk to the rightmost node each time.
  size_t largest_words() const { return largest_; }

  // Reads a node only if `bounds` accepts it, visits at most count() blocks and descends at
  // most kMaxHeight levels: smashed links and cycles are reported as MS_ERR_CORRUPTED.
  bool verify(const BlockBounds& bounds = {}) const;
  // An AVL tree of 2^64 nodes is less than 93 levels high: anything deeper is a cycle.
  static constexpr int kMaxHeight = 96;
  template <typename F>
  void for_each(F f) const { visit(root_, f); }

 private:
  struct Node {
    uint64_t canary;  // a constant: a node overwritten by a stray write is noticed by verify()
    size_t words;
    Node* left;
    Node* right;
    Node* same;  // further blocks of this size
    int height;
    unsigned tag;
  };
  static constexpr uint64_t kCanary = 0x4E4F44454E4F4445ull;  // "NODENODE"
  static_assert(sizeof(Node) == kNodeBytes);

  static int height(const Node* n) { return n == nullptr ? 0 : n->height; }
  static void update(Node* n);
  static Node* rotate_left(Node* n);
  static Node* rotate_right(Node* n);
  static Node* rebalance(Node* n);
  static Node* insert(Node* root, Node* fresh);
  static Node* remove_min(Node* root, Node** min);
  static Node* remove(Node* root, size_t words);
  // The smallest node of at least `words` words below root, or null: take()'s descent. Each
  // node is offered to enter(n) before it is read; false (or a path deeper than kMaxHeight)
  // ends the walk with *stopped set and the best node met so far.
  template <typename Enter>
  static Node* best_fit(Node* root, size_t words, Enter enter, bool* stopped);
  struct Walk {
    const BlockBounds& bounds;
    size_t count = 0;
    size_t words = 0;
  };
  bool verify_subtree(const Node* n, size_t lo, size_t hi, int depth, int* height,
                      Walk* walk) const;
  bool readable(const Node* n, const BlockBounds& bounds) const;
  // Null, or readable with its canary and a height an AVL tree can have.
  bool sound(const Node* n, const BlockBounds& bounds) const;
  // n and the `levels` levels below it. A rebalance at n reads three (a double rotation reads
  // the heights of n's great-grandchildren).
  bool sound_around(const Node* n, const BlockBounds& bounds, int levels = 3) const;
  // Every node of the right spine from n down.
  bool spine_sound(const Node* n, const BlockBounds& bounds) const;

  template <typename F>
  static void visit(const Node* n, F& f) {
    if (n == nullptr) return;
    visit(n->left, f);
    for (const Node* b = n; b != nullptr; b = b->same) {
      f(static_cast<void*>(const_cast<Node*>(b)), b->words, b->tag);
    }
    visit(n->right, f);
  }

  // The rightmost node's size, walked again only when the last block of that size leaves.
  size_t rightmost_words() const;

  Node* root_ = nullptr;
  size_t count_ = 0;
  size_t words_ = 0;
  size_t largest_ = 0;  // words of the largest block; 0 when empty
};

}  // namespace metaspace
