import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.HashMap;
import java.util.Map;

// CpuWindow measures the CPU time (user and system, every thread: the
// clients', the JIT's and the garbage collector's) the JVM uses from its
// construction until nanos() is called.
//
// The JVM's own process counter (OperatingSystemMXBean.getProcessCpuTime,
// from times(2)) counts in clock ticks, 10 ms on Linux: a short window on
// a loaded machine can read as 0. So the window is also read from each
// thread's own clock (/proc/self/task/<tid>/schedstat, nanoseconds), which
// misses only threads that exit inside the window; nanos() is the larger
// of the two readings. Where /proc is missing, the tick counter alone.
final class CpuWindow {
    private final long ticks0 = processCpuNanos();
    private final Map<String, Long> threads0 = threadCpuNanos();

    long nanos() {
        long ticks = processCpuNanos() - ticks0;
        Map<String, Long> threads1 = threadCpuNanos();
        long precise = 0;
        for (Map.Entry<String, Long> e : threads1.entrySet()) {
            // A thread started inside the window spent all its time in it.
            precise += Math.max(0, e.getValue() - threads0.getOrDefault(e.getKey(), 0L));
        }
        return Math.max(ticks, precise);
    }

    // processCpuNanos is the CPU time this JVM has used, in nanoseconds, at
    // the clock tick's resolution.
    static long processCpuNanos() {
        return ((com.sun.management.OperatingSystemMXBean) java.lang.management.ManagementFactory.getOperatingSystemMXBean()).getProcessCpuTime();
    }

    // threadCpuNanos is each live thread's CPU time in nanoseconds (the
    // first field of its schedstat), by thread id; empty without /proc.
    static Map<String, Long> threadCpuNanos() {
        Map<String, Long> m = new HashMap<>();
        try (DirectoryStream<Path> ds = Files.newDirectoryStream(Paths.get("/proc/self/task"))) {
            for (Path t : ds) {
                try {
                    String s = new String(Files.readAllBytes(t.resolve("schedstat"))).trim();
                    int sp = s.indexOf(' ');
                    m.put(t.getFileName().toString(), Long.parseLong(sp < 0 ? s : s.substring(0, sp)));
                } catch (IOException | NumberFormatException e) {
                    // The thread exited while being read, or no schedstat.
                }
            }
        } catch (IOException e) {
            return new HashMap<>();
        }
        return m;
    }
}
