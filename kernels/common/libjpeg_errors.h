// libjpeg's error handling for the decoders that call its API (the pipeline's window decoder and
// the float64 reference): errors and warnings alike (a truncated file's "premature end of data",
// corrupt entropy data: the pixels would be partly grey or wrong) format their message and
// longjmp back to the setjmp of the decoding function, which throws it. Only that function may
// hold C++ objects with destructors across the jump's span.
#pragma once

// jpeglib.h needs size_t and FILE declared before it.
#include <cstddef>
#include <cstdio>
#include <jpeglib.h>

#include <csetjmp>

namespace dlb::data {

struct JpegErrors {
  jpeg_error_mgr pub;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

inline void JpegErrorExit(j_common_ptr cinfo) {
  auto* e = reinterpret_cast<JpegErrors*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, e->message);
  std::longjmp(e->jump, 1);
}

inline void JpegEmitMessage(j_common_ptr cinfo, int level) {
  if (level < 0) JpegErrorExit(cinfo);  // a warning; trace messages (level >= 0) are ignored
}

// Points cinfo at e, with the two handlers above. Call before jpeg_create_decompress.
inline void UseJpegErrors(jpeg_decompress_struct* cinfo, JpegErrors* e) {
  cinfo->err = jpeg_std_error(&e->pub);
  e->pub.error_exit = JpegErrorExit;
  e->pub.emit_message = JpegEmitMessage;
}

}  // namespace dlb::data
