#include "arena/block_tree.hpp"

#include <algorithm>

#include "common/assert.hpp"
#include "common/verify.hpp"

namespace metaspace {

void BlockTree::update(Node* n) { n->height = 1 + std::max(height(n->left), height(n->right)); }

BlockTree::Node* BlockTree::rotate_left(Node* n) {
  Node* r = n->right;
  n->right = r->left;
  r->left = n;
  update(n);
  update(r);
  return r;
}

BlockTree::Node* BlockTree::rotate_right(Node* n) {
  Node* l = n->left;
  n->left = l->right;
  l->right = n;
  update(n);
  update(l);
  return l;
}

BlockTree::Node* BlockTree::rebalance(Node* n) {
  update(n);
  int balance = height(n->left) - height(n->right);
  if (balance > 1) {
    if (height(n->left->left) < height(n->left->right)) n->left = rotate_left(n->left);
    return rotate_right(n);
  }
  if (balance < -1) {
    if (height(n->right->right) < height(n->right->left)) n->right = rotate_right(n->right);
    return rotate_left(n);
  }
  return n;
}

BlockTree::Node* BlockTree::insert(Node* root, Node* fresh) {
  if (root == nullptr) return fresh;
  if (fresh->words == root->words) {
    fresh->same = root->same;
    root->same = fresh;
    return root;
  }
  if (fresh->words < root->words) {
    root->left = insert(root->left, fresh);
  } else {
    root->right = insert(root->right, fresh);
  }
  return rebalance(root);
}

BlockTree::Node* BlockTree::remove_min(Node* root, Node** min) {
  if (root->left == nullptr) {
    *min = root;
    return root->right;
  }
  root->left = remove_min(root->left, min);
  return rebalance(root);
}

BlockTree::Node* BlockTree::remove(Node* root, size_t words) {
  if (words < root->words) {
    root->left = remove(root->left, words);
  } else if (words > root->words) {
    root->right = remove(root->right, words);
  } else {
    if (root->left == nullptr) return root->right;
    if (root->right == nullptr) return root->left;
    Node* successor = nullptr;
    Node* right = remove_min(root->right, &successor);
    successor->left = root->left;
    successor->right = right;
    return rebalance(successor);
  }
  return rebalance(root);
}

void BlockTree::add(void* p, size_t words, unsigned tag) {
  MS_ASSERT(words >= kMinWords, "block %p of %zu words is too small for a tree node", p, words);
  Node* n = static_cast<Node*>(p);
  *n = Node{kCanary, words, nullptr, nullptr, nullptr, 1, tag};
  root_ = insert(root_, n);
  count_++;
  words_ += words;
  if (words > largest_) largest_ = words;
}

template <typename Enter>
BlockTree::Node* BlockTree::best_fit(Node* root, size_t words, Enter enter, bool* stopped) {
  Node* best = nullptr;
  *stopped = false;
  // Bounded: a tree smashed into a cycle (undefined behaviour of the caller) must not hang.
  int depth = 0;
  for (Node* n = root; n != nullptr; depth++) {
    if (depth >= kMaxHeight || !enter(n)) {
      *stopped = true;
      break;
    }
    if (n->words >= words) {
      best = n;
      if (n->words == words) break;
      n = n->left;
    } else {
      n = n->right;
    }
  }
  return best;
}

void* BlockTree::take(size_t words, size_t* got_words, unsigned* tag) {
  bool stopped = false;
  Node* best = best_fit(root_, words, [](const Node*) { return true; }, &stopped);
  if (best == nullptr) return nullptr;
  Node* taken;
  if (best->same != nullptr) {
    taken = best->same;  // keep the tree node, hand out a list member: no rebalancing
    best->same = taken->same;
  } else {
    taken = best;
    root_ = remove(root_, best->words);
    if (taken->words == largest_) largest_ = rightmost_words();
  }
  count_--;
  words_ -= taken->words;
  *got_words = taken->words;
  if (tag != nullptr) *tag = taken->tag;
  return taken;
}

size_t BlockTree::rightmost_words() const {
  const Node* n = root_;
  if (n == nullptr) return 0;
  // Bounded like take(): a smashed right link that loops must not hang.
  for (int depth = 0; n->right != nullptr && depth < kMaxHeight; depth++) n = n->right;
  return n->words;
}

bool BlockTree::sound(const Node* n, const BlockBounds& bounds) const {
  return n == nullptr || (readable(n, bounds) && n->canary == kCanary && n->height >= 1 &&
                          n->height <= kMaxHeight);
}

bool BlockTree::sound_around(const Node* n, const BlockBounds& bounds, int levels) const {
  if (n == nullptr) return true;
  if (!sound(n, bounds)) return false;
  return levels == 0 ||
         (sound_around(n->left, bounds, levels - 1) && sound_around(n->right, bounds, levels - 1));
}

bool BlockTree::spine_sound(const Node* n, const BlockBounds& bounds) const {
  for (int depth = 0; n != nullptr; n = n->right, depth++) {
    if (depth >= kMaxHeight || !sound(n, bounds)) return false;
  }
  return true;
}

bool BlockTree::peek_checked(size_t words, const BlockBounds& bounds, const void** block,
                             size_t* got_words, unsigned* tag) const {
  *block = nullptr;
  // The descent of take(); the path of remove(best) is its prefix down to best.
  bool stopped = false;
  const Node* best = best_fit(
      root_, words, [&](const Node* n) { return sound_around(n, bounds); }, &stopped);
  if (stopped) return false;
  if (best == nullptr) return true;
  const Node* taken = best;
  if (best->same != nullptr) {
    // A list member goes and the tree keeps its shape: the member and its link are all it reads.
    // A member's tree links stay as add() wrote them (it never becomes a node while in a list).
    taken = best->same;
    if (!sound(taken, bounds) || taken->words != best->words || taken->left != nullptr ||
        taken->right != nullptr || taken->height != 1 || !sound(taken->same, bounds)) {
      return false;
    }
  } else {
    // remove() with two children also takes the successor: the left spine of the right subtree.
    if (best->left != nullptr && best->right != nullptr) {
      int d = 0;
      for (const Node* n = best->right; n != nullptr; n = n->left) {
        if (++d > kMaxHeight || !sound_around(n, bounds)) return false;
      }
    }
    // The largest size is walked again when best was it: down the right spine of the tree that
    // remains, whose nodes are the old spine's, best's left subtree's spine, or nodes near the
    // paths above (checked with them).
    if (best->words == largest_ &&
        (!spine_sound(root_, bounds) || !spine_sound(best->left, bounds))) {
      return false;
    }
  }
  *block = taken;
  *got_words = taken->words;
  *tag = taken->tag;
  return true;
}

bool BlockTree::readable(const Node* n, const BlockBounds& bounds) const {
  // The node header first, then the block it claims to be.
  return reinterpret_cast<uintptr_t>(n) % 8 == 0 && bounds(n, sizeof(Node)) &&
         n->words >= kMinWords && n->words <= SIZE_MAX / 8 && bounds(n, n->words * 8);
}

bool BlockTree::verify_subtree(const Node* n, size_t lo, size_t hi, int depth, int* h,
                               Walk* walk) const {
  if (n == nullptr) {
    *h = 0;
    return true;
  }
  MS_VERIFY(depth < kMaxHeight, "tree deeper than %d levels: a cycle", kMaxHeight);
  MS_VERIFY(walk->count < walk->bounds.max_blocks, "tree: more blocks than the arena could "
            "hold: a smashed link");
  MS_VERIFY(readable(n, walk->bounds), "tree links to %p, which is not free memory of this "
            "arena: a freed block was overwritten", (const void*)n);
  MS_VERIFY(n->canary == kCanary, "tree node %p overwritten", (const void*)n);
  MS_VERIFY(n->words > lo && n->words < hi, "tree node %p (%zu words) out of order",
            (const void*)n, n->words);
  const Node* slow = n;  // half speed: meets `b` iff the list is a cycle
  size_t steps = 0;
  for (const Node* b = n; b != nullptr; b = b->same) {
    MS_VERIFY(steps == 0 || b != slow, "size list of %zu words is a cycle through %p: a block "
              "freed twice?", n->words, (const void*)b);
    MS_VERIFY(walk->count < walk->bounds.max_blocks, "tree: more blocks than the arena could "
              "hold");
    MS_VERIFY(b == n || readable(b, walk->bounds), "size list of %zu words links to %p, which "
              "is not free memory of this arena", n->words, (const void*)b);
    MS_VERIFY(b->canary == kCanary && b->words == n->words, "list block %p of size %zu broken",
              (const void*)b, n->words);
    walk->count++;
    walk->words += b->words;
    if (++steps % 2 == 0) slow = slow->same;
  }
  int hl = 0;
  int hr = 0;
  if (!verify_subtree(n->left, lo, n->words, depth + 1, &hl, walk)) return false;
  if (!verify_subtree(n->right, n->words, hi, depth + 1, &hr, walk)) return false;
  MS_VERIFY(n->height == 1 + std::max(hl, hr), "node %p height %d", (const void*)n, n->height);
  MS_VERIFY(hl - hr <= 1 && hr - hl <= 1, "node %p unbalanced (%d/%d)", (const void*)n, hl, hr);
  *h = n->height;
  return true;
}

bool BlockTree::verify(const BlockBounds& bounds) const {
  int h = 0;
  Walk walk{bounds};
  if (!verify_subtree(root_, 0, SIZE_MAX, 0, &h, &walk)) return false;
  MS_VERIFY(largest_ == rightmost_words(), "tree caches %zu words as its largest, holds %zu",
            largest_, rightmost_words());
  MS_VERIFY(walk.count == count_ && walk.words == words_,
            "tree holds %zu blocks / %zu words, counters say %zu / %zu", walk.count, walk.words,
            count_, words_);
  return true;
}

}  // namespace metaspace
