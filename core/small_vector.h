#pragma once
// SmallVector: a vector that keeps up to N elements inline (no heap allocation), for the few
// edges and metadata entries of an autograd node and the backward engine's queue.
#include <cstddef>
#include <new>
#include <utility>
#include <vector>

namespace tg {

template <typename T, size_t N> class SmallVector {
 public:
  SmallVector() = default;
  SmallVector(const SmallVector&) = delete;
  SmallVector& operator=(const SmallVector&) = delete;
  ~SmallVector() { clear(); }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  T* data() { return heap_.empty() ? inline_data() : heap_.data(); }
  const T* data() const { return heap_.empty() ? inline_data() : heap_.data(); }
  T& operator[](size_t i) { return data()[i]; }
  const T& operator[](size_t i) const { return data()[i]; }
  T* begin() { return data(); }
  T* end() { return data() + size_; }
  const T* begin() const { return data(); }
  const T* end() const { return data() + size_; }
  void reserve(size_t) {}  // inline storage first; growth is rare

  template <typename... Args> T& emplace_back(Args&&... args) {
    if (heap_.empty() && size_ < N) {
      T* p = new (inline_data() + size_) T(std::forward<Args>(args)...);
      ++size_;
      return *p;
    }
    if (heap_.empty()) {  // spill the inline elements to the heap
      heap_.reserve(2 * N + 1);
      for (size_t i = 0; i < size_; ++i) {
        heap_.push_back(std::move(inline_data()[i]));
        inline_data()[i].~T();
      }
    }
    heap_.emplace_back(std::forward<Args>(args)...);
    ++size_;
    return heap_.back();
  }
  void push_back(T v) { emplace_back(std::move(v)); }
  T& back() { return data()[size_ - 1]; }
  void pop_back() {
    if (heap_.empty()) {
      inline_data()[size_ - 1].~T();
    } else {
      heap_.pop_back();
    }
    --size_;
  }
  void clear() {
    if (heap_.empty()) {
      for (size_t i = 0; i < size_; ++i) inline_data()[i].~T();
    } else {
      heap_.clear();
    }
    size_ = 0;
  }

 private:
  T* inline_data() { return std::launder(reinterpret_cast<T*>(storage_)); }
  const T* inline_data() const { return std::launder(reinterpret_cast<const T*>(storage_)); }
  alignas(T) unsigned char storage_[N * sizeof(T)];
  size_t size_ = 0;
  std::vector<T> heap_;
};

}  // namespace tg
