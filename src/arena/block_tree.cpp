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

void* BlockTree::take(size_t words, size_t* got_words, unsigned* tag) {
  Node* best = nullptr;
  // Bounded: a tree smashed into a cycle (undefined behaviour of the caller) must not hang.
  int depth = 0;
  for (Node* n = root_; n != nullptr && depth < kMaxHeight; depth++) {
    if (n->words >= words) {
      best = n;
      if (n->words == words) break;
      n = n->left;
    } else {
      n = n->right;
    }
  }
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
  while (n->right != nullptr) n = n->right;
  return n->words;
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
