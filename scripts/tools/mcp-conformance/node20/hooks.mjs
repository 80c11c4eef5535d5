// Module resolution hook (node:module register): `fs` and `node:fs` mean fs.mjs, except to
// fs.mjs itself, which wraps the real module.
const shim = new URL('./fs.mjs', import.meta.url).href;

export async function resolve(specifier, context, nextResolve) {
  if ((specifier === 'fs' || specifier === 'node:fs') && context.parentURL !== shim) {
    return { url: shim, shortCircuit: true };
  }
  return nextResolve(specifier, context);
}
