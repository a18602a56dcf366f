// Extension modules require @aro/kube by name and must get the very module the controller runs (the
// same decorators, the same injection tokens): this is that file, in the image's compiled controller.
module.exports = require('../../../dist/apps/controller/libs/kube/src/index.js');
