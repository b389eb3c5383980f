// Host memory checks. With overcommit, a too-large allocation "succeeds" and the kernel's OOM
// killer ends the process once the pages are touched; ops check before allocating, so an
// oversized batch is reported ("out of memory: needs ...") and the run goes on.
#pragma once

namespace dlb {

// MemAvailable of /proc/meminfo in bytes; 0 when unknown.
double HostBytesAvailable();
// Throws dlb::Error("out of memory: needs X GiB of host memory, Y GiB available") when `bytes`
// exceed 90% of what is available.
void RequireHostBytes(double bytes);

// The process's peak resident memory (VmHWM) in bytes since the last ResetPeakRss(); 0 when
// unknown. ResetPeakRss writes "5" to /proc/self/clear_refs (Linux >= 4.0), so a case's peak is
// its own, not the largest of the cases before it.
void ResetPeakRss();
double PeakRssBytes();

}  // namespace dlb
