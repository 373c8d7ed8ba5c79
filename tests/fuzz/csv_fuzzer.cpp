// Fuzzes tg::data::read_csv on text in memory (read_csv_from_string, the same parser as the file
// form): the first byte picks the options (header, delimiter, dtype). Either a [rows, columns]
// tensor of the dtype or a typed tg::Error.
#include <tapegrad/nn/data.h>

#include "fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  tg_fuzz::Input in(data, size);
  tg::data::CsvOptions options;
  const uint8_t b = in.byte();
  options.header = b & 1;
  static const char delimiters[] = {',', ';', '\t', ' ', '|', '\n', '\0', '-'};
  options.delimiter = delimiters[(b >> 1) & 7];
  static const tg::DType dtypes[] = {tg::kFloat32, tg::kFloat64, tg::kInt64,   tg::kInt32,
                                     tg::kBool,    tg::kFloat32, tg::kFloat16, tg::kFloat64};
  options.dtype = dtypes[(b >> 4) & 7];
  const std::string text = in.rest();
  tg::Tensor t;
  if (tg_fuzz::runs_or_typed_error([&] { t = tg::data::read_csv_from_string(text, options); })) {
    FUZZ_CHECK(t.dim() == 2 && t.dtype() == options.dtype && t.is_contiguous());
    // Each row came from at least one byte of a line.
    FUZZ_CHECK(static_cast<size_t>(t.size(0)) <= text.size() + 1);
  }
  return 0;
}
