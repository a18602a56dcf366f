/**
 * The project runs on Node.js 24 (the `node` development dependency; npm puts its binary first on PATH
 * for every script). A test run that silently fell back to the machine's Node 20 would hide exactly the
 * differences the pins were chosen for (require(esm)), so the run itself fails.
 */
describe('the Node.js running the tests', () => {
  it('is Node 24 or newer', () => {
    const major = Number(process.versions.node.split('.')[0]);
    expect(major).toBeGreaterThanOrEqual(24);
  });
});
