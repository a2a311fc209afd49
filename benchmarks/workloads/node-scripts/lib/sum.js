module.exports.total = (xs) => xs.reduce((s, x) => s + x.v, 0);
