// The echo backends live with the demo (demo/echo-backend.ts, outside test/, since the demo is not a
// test); the tests import them from here.
export * from '../../demo/echo-backend.js';
