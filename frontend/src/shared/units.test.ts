import { describe, expect, it } from "vitest";
import {
  formatByteRate,
  formatBytes,
  formatCount,
  formatDuration,
  formatFlopRate,
  formatFlops,
  formatPercent,
  formatSi,
  NOT_OBSERVED,
  timeUnit,
} from "./units.ts";

describe("units", () => {
  it("writes durations from ns in the unit that fits, to 3 significant digits", () => {
    expect(formatDuration(850)).toBe("850 ns");
    expect(formatDuration(0.5)).toBe("0.5 ns");
    expect(formatDuration(0)).toBe("0 ns");
    expect(formatDuration(1234)).toBe("1.23 µs");
    expect(formatDuration(12_345_678)).toBe("12.3 ms");
    expect(formatDuration(2.5e9)).toBe("2.5 s");
    expect(formatDuration(90e9)).toBe("1.5 min");
    expect(formatDuration(4.5 * 3600e9)).toBe("4.5 h");
    expect(formatDuration(-3e6)).toBe("-3 ms");
  });

  it("gives durations more digits when asked", () => {
    expect(formatDuration(12_345_678, 4)).toBe("12.35 ms");
    expect(formatDuration(5_008_965_807, 4)).toBe("5.009 s");
  });

  it("moves to the next unit when rounding reaches it", () => {
    expect(formatDuration(999_700)).toBe("1 ms");
    expect(formatDuration(59.99e9)).toBe("1 min");
  });

  it("writes sizes in binary units, bytes under 1 KiB exactly", () => {
    expect(formatBytes(52)).toBe("52 B");
    expect(formatBytes(1000)).toBe("1000 B");
    expect(formatBytes(9799.68)).toBe("9.57 KiB");
    expect(formatBytes(12.5 * 1024 ** 2)).toBe("12.5 MiB");
    expect(formatBytes(3 * 1024 ** 3)).toBe("3 GiB");
    expect(formatBytes(2 * 1024 ** 4)).toBe("2 TiB");
  });

  it("writes counts with thousands separators, other numbers to 4 digits", () => {
    expect(formatCount(1_234_567)).toBe("1,234,567");
    expect(formatCount(7.09983)).toBe("7.1");
    expect(formatCount(12_345.6)).toBe("12,350");
  });

  it("writes FLOP rates and bandwidths with decimal SI prefixes, as datasheets quote them", () => {
    expect(formatFlopRate(1.23e13)).toBe("12.3 TFLOP/s");
    expect(formatFlopRate(9.18e14)).toBe("918 TFLOP/s");
    expect(formatFlopRate(4_472_328_954)).toBe("4.47 GFLOP/s");
    expect(formatFlopRate(0)).toBe("0 FLOP/s");
    expect(formatFlopRate(0.5)).toBe("0.5 FLOP/s");
    expect(formatByteRate(1.52e12)).toBe("1.52 TB/s");
    expect(formatByteRate(1_637_993_152_512)).toBe("1.64 TB/s");
    expect(formatByteRate(2.96e18)).toBe("2.96 EB/s");
    expect(formatByteRate(999_700)).toBe("1 MB/s");
    expect(formatFlops(1_626_718_863_360)).toBe("1.63 TFLOP");
    expect(formatSi(2.5e3, "op/s", 2)).toBe("2.5 kop/s");
  });

  it("writes fractions as percentages, tiny ones without an exponent", () => {
    expect(formatPercent(0.04347867965403494)).toBe("4.35%");
    expect(formatPercent(1)).toBe("100%");
    expect(formatPercent(0)).toBe("0%");
    expect(formatPercent(4.87e-6)).toBe("0.000487%");
    expect(formatPercent(1e-9)).toBe("< 0.0001%");
    expect(formatPercent(18083.387)).toBe("1,810,000%");
  });

  it("says not observed for absent values, never 0", () => {
    for (const absent of [null, undefined, NaN, Infinity]) {
      expect(formatDuration(absent)).toBe(NOT_OBSERVED);
      expect(formatBytes(absent)).toBe(NOT_OBSERVED);
      expect(formatCount(absent)).toBe(NOT_OBSERVED);
      expect(formatFlopRate(absent)).toBe(NOT_OBSERVED);
      expect(formatByteRate(absent)).toBe(NOT_OBSERVED);
      expect(formatPercent(absent)).toBe(NOT_OBSERVED);
    }
    expect(NOT_OBSERVED).toBe("not observed");
  });

  it("stops time units at seconds for values read with all their decimals", () => {
    expect(timeUnit(90e9).symbol).toBe("min");
    expect(timeUnit(90e9, "s").symbol).toBe("s");
    expect(timeUnit(0.2, "s").symbol).toBe("ns");
  });
});
