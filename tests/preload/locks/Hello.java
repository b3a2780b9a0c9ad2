// SPDX-License-Identifier: MIT
// Hello: the smallest JVM program, whose leak verdict under every-block tracking must pass.
public class Hello {
  public static void main(String[] args) {
    System.out.println("Hello");
  }
}
