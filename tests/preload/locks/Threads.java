// SPDX-License-Identifier: MIT
// Threads: a JVM program with threads of its own and direct buffers (native memory the JVM
// mallocs). Every JVM thread asks glibc for its stack (pthread_getattr_np) as it starts. Prints
// the sum of every byte of four 1 MiB buffers, each filled with its index's low byte.
import java.nio.ByteBuffer;

public class Threads {
  public static void main(String[] args) throws Exception {
    Thread[] t = new Thread[4];
    long[] sums = new long[4];
    for (int i = 0; i < 4; i++) {
      final int k = i;
      t[i] = new Thread(() -> {
        ByteBuffer b = ByteBuffer.allocateDirect(1 << 20);
        for (int j = 0; j < b.capacity(); j++) b.put(j, (byte) j);
        long s = 0;
        for (int j = 0; j < b.capacity(); j++) s += b.get(j);
        sums[k] = s;
      });
      t[i].start();
    }
    for (Thread x : t) x.join();
    System.out.println("sum " + (sums[0] + sums[1] + sums[2] + sums[3]));
  }
}
