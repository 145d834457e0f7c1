/* revtx-book widget: Float32 arithmetic: f32 rounding, erf in float64, and GELU in its exact erf form. */


/* 2. Float32 arithmetic ------------------------------------------------------ */

export const f32 = Math.fround;
const SQRT1_2_F32 = f32(Math.SQRT1_2);
const TWO_OVER_SQRT_PI = 2 / Math.sqrt(Math.PI);

/** erf in float64, slowly but to about 3e-15: its Maclaurin series near zero,
 * the continued fraction of erfc further out. Used only to build `erfTable`. */
function erfSeries(x) {
  const a = Math.abs(x);
  if (a < 2.5) {
    // erf x = 2/√π Σ (-1)^n x^(2n+1) / (n! (2n+1))
    const x2 = x * x;
    let term = x; // (-1)^n x^(2n+1) / n!
    let sum = x;
    for (let n = 1; n < 80; n++) {
      term *= -x2 / n;
      const next = term / (2 * n + 1);
      sum += next;
      if (Math.abs(next) <= 1e-17 * Math.abs(sum)) break;
    }
    return TWO_OVER_SQRT_PI * sum;
  }
  // erfc a = exp(-a²)/√π · 1/(a + (1/2)/(a + 1/(a + (3/2)/(a + 2/(a + …))))),
  // evaluated from the tail inwards.
  let frac = a;
  for (let k = 80; k >= 1; k--) frac = a + k / 2 / frac;
  const erfc = Math.exp(-a * a) / (Math.sqrt(Math.PI) * frac);
  return Math.sign(x) * (1 - erfc);
}

// erf by Taylor series around the nearest point of a grid of step 1/16 on [0, 6]:
// erf(x₀ + h) = erf x₀ + Σₙ cₙ hⁿ, cₙ = (2/√π) e^(−x₀²) (−1)ⁿ⁻¹ Hₙ₋₁(x₀) / n!
// (Hₙ the Hermite polynomials, Hₙ₊₁ = 2x Hₙ − 2n Hₙ₋₁). With |h| ≤ 1/32 twelve terms
// leave a remainder far below 1e-16, so this is as accurate as erfSeries and costs
// twelve multiply-adds. The table is built with the first model.
const ERF_STEPS = 16;
const ERF_LIMIT = 6; // erfc(6) ≈ 2e-17: erf is ±1 in float64 beyond
const ERF_TERMS = 12;
let erfTable = null; // per grid point: erf x₀, then c₁ .. c₁₂; built by buildModel

function buildErfTable() {
  const points = ERF_LIMIT * ERF_STEPS + 1;
  const table = new Float64Array(points * (ERF_TERMS + 1));
  for (let k = 0; k < points; k++) {
    const x0 = k / ERF_STEPS;
    const row = k * (ERF_TERMS + 1);
    table[row] = erfSeries(x0);
    const scale = TWO_OVER_SQRT_PI * Math.exp(-x0 * x0);
    let hPrev = 0; // H₋₁, unused
    let h = 1; // H₀
    let factorial = 1;
    for (let n = 1; n <= ERF_TERMS; n++) {
      factorial *= n;
      table[row + n] = (scale * (n % 2 === 1 ? h : -h)) / factorial; // uses Hₙ₋₁
      const next = 2 * x0 * h - 2 * (n - 1) * hPrev; // Hₙ
      hPrev = h;
      h = next;
    }
  }
  return table;
}

function erf(x) {
  const a = Math.abs(x);
  if (!(a < ERF_LIMIT)) return a === a ? Math.sign(x) : NaN;
  const k = Math.round(a * ERF_STEPS);
  const h = a - k / ERF_STEPS;
  const row = k * (ERF_TERMS + 1);
  let poly = 0;
  for (let n = ERF_TERMS; n >= 1; n--) poly = (poly + erfTable[row + n]) * h;
  const value = erfTable[row] + poly;
  return x < 0 ? -value : value;
}

/** GELU, exact erf form: (x · 0.5) · (1 + erf(x · √½)), each step rounded to float32. */
export function gelu(x) {
  const half = f32(x * 0.5);
  const e = f32(erf(f32(x * SQRT1_2_F32)));
  return f32(half * f32(1 + e));
}

/** Builds the erf table, once, before the first model computes. */
export function prepareErf() {
  erfTable ??= buildErfTable();
}
