import { describe, expect, it } from "vitest";
import { shortName } from "./names.ts";

describe("shortName", () => {
  it("collapses the outermost template arguments of C++ names", () => {
    expect(shortName("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, at::detail::Array<char*, 1> >(int, T)")).toBe(
      "void at::native::vectorized_elementwise_kernel<…>(int, T)",
    );
    expect(shortName("std::map<int, std::vector<int>>::find")).toBe("std::map<…>::find");
  });

  it("leaves names without paired brackets as they are", () => {
    expect(shortName("aten::mm")).toBe("aten::mm");
    expect(shortName("operator<")).toBe("operator<");
    expect(shortName("a > b")).toBe("a > b");
  });
});
